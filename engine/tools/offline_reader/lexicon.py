"""General-English word lists the reader uses; none tied to a dataset (tokens come from engine.text)."""

from __future__ import annotations

from engine.text import words

MONTH_NAMES = (
    "january february march april may june july august september october november december".split()
)
WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
CONNECTORS = frozenset("of de da di del della des du la le los las von van der den y the".split())
NEGATIONS = frozenset("not never no neither nor without n't cannot none".split())
PLACE_CUES = frozenset("in at from near located based into across of".split())
INSTITUTION_WORDS = frozenset(
    "university college school institute institution laboratory company corporation inc ltd records "
    "club church museum party award prize medal festival station airport stadium league association "
    "society council department ministry bank hotel hospital academy theatre theater film album "
    "series band group team army navy force corps agency committee foundation".split()
)
GEO_WORDS = frozenset(
    "river city county street province state kingdom republic empire park island mountain lake "
    "sea ocean bay valley district region".split()
)
NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
    "hundred": 100, "dozen": 12, "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5,
    "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "once": 1, "twice": 2,
}
ORDINALS = frozenset("first second third fourth fifth sixth seventh eighth ninth tenth".split())
SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
UNITS = frozenset(
    "km kilometres kilometers mi miles mph m metres meters ft feet foot cm mm kg g tonnes tons lb "
    "pounds % percent acres hectares sq km² m² km/h kmh".split()
)
TEMPORAL_WORDS = frozenset(
    "born birth died death founded established formed created built opened started launched "
    "released published premiered began first earlier earliest older oldest younger youngest later "
    "latest last before after newer newest sooner recent recently introduced incorporated".split()
)
DEATH_WORDS = frozenset("died death dead killed".split())
BIRTH_WORDS = frozenset("born birth".split())
DEMONYM_NOUNS = frozenset("nationality nationalities citizenship ethnicity".split())
IRREGULAR = dict(
    pair.split(":") for pair in (
        "won:win wrote:write written:write began:begin begun:begin became:become led:lead "
        "taught:teach built:build made:make held:hold gave:give given:give took:take taken:take "
        "met:meet left:leave sold:sell bought:buy grew:grow grown:grow knew:know spoke:speak "
        "chose:choose chosen:choose drew:draw drawn:draw sang:sing sung:sing fought:fight "
        "thought:think brought:bring sent:send spent:spend lost:lose fell:fall saw:see seen:see "
        "went:go gone:go came:come ran:run wore:wear worn:wear shot:shoot flew:fly flown:fly"
    ).split()
)
SUBJECT_PRONOUNS = frozenset("he she his her it its they their".split())
# participles that end a noun phrase ('X's doctoral advisor born …'); none of them names a relation
PARTICIPLES = frozenset("born died named called known".split())
PREPOSITIONS = frozenset("of in on at to by for from with into through across along via within".split())


lower_words = words  # the one tokenizer (engine.text)


def is_negation(word: str) -> bool:
    return word in NEGATIONS or word.endswith("n't")
