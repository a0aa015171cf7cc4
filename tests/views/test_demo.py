"""Demo tour: one question per method, played with captions."""

from __future__ import annotations

import shutil

from streamlit.testing.v1 import AppTest

from engine.methods.base import method_ids
from paths import MINI_PACK, ROOT


def test_the_tour_asks_one_question_per_method_and_explains_the_steps(ragscope_home):
    packs = ragscope_home / "packs"
    if not (packs / "mini").exists():
        shutil.copytree(MINI_PACK, packs / "mini")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["pack"] = "mini"
    at.run()
    at.switch_page("views/demo.py").run()
    at.session_state["demo.view.vanilla.round.playing"] = False  # no auto-advance sleeps in a test
    at.button(key="demo.start").click().run()
    assert not at.exception
    assert at.radio(key="demo.stop").options == [at.radio(key="demo.stop").format_func(m) for m in method_ids()]
    assert any("searched the knowledge pack" in c.value for c in at.caption)
