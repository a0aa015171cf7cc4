"""Knowledge: the packs and what is in them — counts, documents, the KG, rules, new packs, the index."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import streamlit as st

import ui_state
from components.safe import highlight_terms, md_text
from engine.app import packs
from engine.app.packs import (
    ALLOWED_SUFFIXES,
    MAX_UPLOAD_MB,
    SPLITTERS,
    IngestOptions,
    MinedRule,
    MiningConfig,
    Pack,
    Rule,
    SavedRules,
    SplitterConfig,
    Upload,
)
from engine.app.runs import Workbench
from engine.errors import DiskFull, PackError, RagscopeError
from engine.trace import GraphDeltaStep

PAGE = "knowledge"
TABS = ("Overview", "Documents", "Graph", "Rules", "Build a pack", "Index")
MAX_PROBLEMS_SHOWN = 50


# ---- Overview ------------------------------------------------------------------------------------


def overview(pack: Pack) -> None:
    rows = []
    for name, folder in ui_state.available_packs().items():
        try:
            row = ui_state.pack_summary(str(folder)).row()
        except PackError as exc:  # one broken folder must not hide the other packs
            row = packs.unloadable_pack(name, str(exc)).row()
        rows.append({**row, "pack": name})  # the folder name is what the sidebar lists
    problems = any(r["problem"] for r in rows)
    st.dataframe(rows, hide_index=True, width="stretch", key=f"{PAGE}.packs",
                 column_order=[c for c in rows[0] if c != "problem" or problems] if rows else None,
                 column_config={"question types": st.column_config.TextColumn(width="large"),
                                "problem": st.column_config.TextColumn(width="large")})
    st.subheader(md_text(pack.info.title or pack.info.name))  # a pack's title is data, like its documents
    if pack.info.description:
        st.markdown(md_text(pack.info.description))
    st.caption(f"Pack {md_text(pack.info.name)} · license: {md_text(pack.info.license or 'not stated')}"
               + (" · facts carry times" if pack.info.temporal else ""))


# ---- Documents -----------------------------------------------------------------------------------


def documents(workbench: Workbench) -> None:
    with st.form(f"{PAGE}.search"):
        query = st.text_input("Search the documents", key=f"{PAGE}.query",
                              placeholder="e.g. where was Ada Lovelace born")
        k = st.slider("Results", 1, 20, 5, key=f"{PAGE}.k")
        st.form_submit_button("Search")
    if query.strip():
        search_results(workbench, query.strip(), k)
    st.divider()
    document_viewer(workbench.pack)


def search_results(workbench: Workbench, query: str, k: int) -> None:
    try:
        with st.spinner("Searching (the first search also builds the index)…"):
            hits = packs.search(workbench.retrieval, query, k)
    except RagscopeError as exc:
        st.error(md_text(str(exc)))  # may quote a path, URL or a server's words
        return
    if not hits:
        st.info("Nothing matched. Try other words, or check the Index tab.")
        return
    st.caption(f"{len(hits)} best chunks by hybrid retrieval (dense + BM25, reciprocal-rank fusion)")
    terms = packs.query_terms(query)
    for i, hit in enumerate(hits):
        with st.container(border=True):
            head, button = st.columns([6, 1], vertical_alignment="center")
            head.markdown(f"**{hit.rank}. {md_text(hit.title)}** · {md_text(hit.doc_id)} · score {hit.score:.4f}")
            button.button("Open", key=f"{PAGE}.open.{i}", on_click=_open_document, args=(hit.doc_id,),
                          help="Show the whole document below")
            st.markdown(highlight_terms(hit.text, terms))


def _open_document(doc_id: str) -> None:
    st.session_state[f"{PAGE}.doc"] = doc_id  # a callback may set a widget's value before it is drawn


def document_viewer(pack: Pack) -> None:
    by_id = pack.documents_by_id
    doc_id = st.selectbox("Read a document", list(by_id), index=None, key=f"{PAGE}.doc",
                          format_func=lambda i: f"{by_id[i].title} ({i})", placeholder="Type a title or an id")
    if doc_id is None:
        st.caption(f"{len(by_id)} documents in this pack; pick one, or press Open on a search result.")
        return
    doc = by_id[doc_id]
    st.markdown(f"#### {md_text(doc.title)}")
    details = [f"id {md_text(doc.id)}"] + ([f"url {md_text(doc.url)}"] if doc.url else [])
    st.caption(" · ".join(details))
    if doc.entities:
        st.caption("Entities: " + md_text(", ".join(doc.entities)))
    # Hard line breaks keep the document's own lines; md_text keeps its markup inert.
    st.markdown(md_text(doc.text).replace("\n", "  \n"))


# ---- Graph ---------------------------------------------------------------------------------------


def graph(path: str) -> None:
    kg = ui_state.knowledge_graph(path)
    choices = packs.entity_choices(kg)
    if not choices:
        st.info("This pack has no facts yet. Add a triples.tsv (head⇥relation⇥tail[⇥time]) to browse its graph.")
        return
    left, right = st.columns([3, 1])
    entity = left.selectbox("Entity", choices, index=choices.index(packs.hub_entity(kg)), key=f"{PAGE}.entity",
                            help="Type to filter; the list holds every entity that has at least one fact.")
    limit = right.number_input("Facts at most", 5, 500, 50, step=5, key=f"{PAGE}.fact_limit")
    facts, total = packs.entity_facts(kg, entity, int(limit))
    st.caption(f"{len(facts)} of {total} facts about {md_text(entity)}"
               + (" — raise the limit to see the rest" if total > len(facts) else ""))
    draw_neighbourhood(packs.neighbourhood_step(entity, facts))
    st.dataframe(packs.fact_rows(facts), hide_index=True, width="stretch", key=f"{PAGE}.facts",
                 height=table_height(len(facts)))


def draw_neighbourhood(step: GraphDeltaStep) -> None:
    try:
        from components.graph import render_graph  # drawn by its own component; optional on this page
    except ImportError:
        st.caption("The graph drawing is not available in this build; the facts are listed below.")
        return
    render_graph([step], 0, key=f"{PAGE}.graph")


# ---- Rules ---------------------------------------------------------------------------------------


def rules(path: str, pack: Pack) -> None:
    if not pack.rules:
        st.info("This pack has no rules. Add a rules.jsonl ({\"id\",\"head\",\"body\":[…],\"confidence\","
                "\"support\"}) to use the RuleRAG method with it, or mine them below.")
        mining(path, pack)
        return
    # Numbers before the long text column, so they stay in view on a laptop screen.
    st.dataframe(packs.rule_rows(pack.rules), hide_index=True, width="stretch", key=f"{PAGE}.rules",
                 height=table_height(len(pack.rules)), column_order=["id", "rule", "support", "confidence", "text"],
                 column_config={
                     "rule": st.column_config.TextColumn("rule", width="large"),
                     "support": st.column_config.NumberColumn("support", width="small"),
                     "confidence": st.column_config.NumberColumn("confidence", format="%.3f", width="small"),
                     "text": st.column_config.TextColumn("text", width="large"),
                 })
    st.caption("support = body paths whose ends the head relation also links; confidence = support / body paths.")
    if st.button("Recompute statistics", key=f"{PAGE}.recompute",
                 help="Count support and confidence again from this pack's triples"):
        recomputed(path, pack)
    mining(path, pack)


def mining(path: str, pack: Pack) -> None:
    with st.expander("Mine rules"):
        if not pack.triples:
            st.info("Rules are mined from the KG; this pack has no triples.tsv.")
            return
        config = mining_config(pack)
        if st.button("Mine", key=f"{PAGE}.mine"):
            bar = st.progress(0.0, text="Walking rule bodies…")
            try:
                ui_state.set_mined_rules(path, packs.mine(pack, config,
                                                          progress=lambda done, total: bar.progress(done / total)))
                st.session_state[f"{PAGE}.leave_out"] = []  # ids are per mining: m003 may now be another rule
            except RagscopeError as exc:  # e.g. the time limit on a huge KG: say so, keep the page
                st.error(md_text(str(exc)))
            bar.empty()
        found = ui_state.mined_rules(path)
        if found is None:
            st.caption("Closed-path rules with bodies of one or two relations (inverse edges as ~relation).")
            return
        mined_table(path, found)


def mining_config(pack: Pack) -> MiningConfig:
    left, mid, right, last = st.columns(4)
    min_support = left.number_input("min support", 1, 1000, 3, key=f"{PAGE}.mine_support")
    min_confidence = mid.slider("min confidence", 0.0, 1.0, 0.3, 0.05, key=f"{PAGE}.mine_confidence")
    min_coverage = right.slider("min head coverage", 0.0, 1.0, 0.0, 0.01, key=f"{PAGE}.mine_coverage")
    max_rules = last.number_input("max rules", 1, 5000, 200, key=f"{PAGE}.mine_max")
    temporal = st.checkbox("temporal: body facts must not postdate the head fact", key=f"{PAGE}.mine_temporal",
                           value=pack.info.temporal)
    return MiningConfig(min_support=int(min_support), min_confidence=float(min_confidence),
                        min_head_coverage=float(min_coverage), max_rules=int(max_rules), temporal=temporal)


def mined_table(path: str, mined: tuple[MinedRule, ...]) -> None:
    if not mined:
        st.info("No rule passes these thresholds; lower them and mine again.")
        return
    rows = packs.mined_rows(mined)
    st.success(f"{counted(len(mined), 'rule')} mined. Leave out any you do not want, then save the rest into the pack.")
    st.dataframe(rows, hide_index=True, width="stretch", key=f"{PAGE}.mined_table", height=table_height(len(rows)))
    save_mined(path, packs.mined_pack_rules(mined))


def save_mined(path: str, rules: tuple[Rule, ...]) -> None:
    labels = {r.id: f"{r.id}: {packs.rule_text(r.head, r.body)}" for r in rules}
    left_out = st.multiselect("Leave out", list(labels), key=f"{PAGE}.leave_out", format_func=labels.__getitem__,
                              help="Rules not to save; every other mined rule goes into the pack's rules.jsonl.")
    kept = len(rules) - len(left_out)
    bundled = packs.is_bundled(path)
    if bundled:
        st.caption(f"This pack ships with ragscope and is not changed. The rules go into a copy of it under "
                   f"{md_text(str(ui_state.settings().packs))}, which becomes the current pack.")
        st.text_input("Name of the copy", value=f"{Path(path).name}-mined", max_chars=64, key=f"{PAGE}.copy_name",
                      help="Letters, digits, '-' and '_'; it becomes the new pack's folder name.")
    st.button(f"Save {counted(kept, 'rule')} into {'a copy of ' if bundled else ''}the pack", key=f"{PAGE}.save_rules",
              type="primary", disabled=not kept, on_click=save_clicked, args=(path, rules, bundled),
              help="Rules the pack already has (same head and body) are skipped; a taken id gets a new one.")


def save_clicked(path: str, rules: tuple[Rule, ...], bundled: bool) -> None:
    """The Save button's callback: it runs before the sidebar is drawn, so a new copy can become the current pack."""
    left_out = set(st.session_state[f"{PAGE}.leave_out"])
    kept = [r for r in rules if r.id not in left_out]
    name = st.session_state[f"{PAGE}.copy_name"].strip() if bundled else Path(path).name
    try:
        saved = packs.save_mined(path, kept, ui_state.settings(), copy_as=name if bundled else None,
                                 existing=ui_state.available_packs() if bundled else ())
    except PackError as exc:  # every problem; the pack's rules.jsonl is as it was
        ui_state.post_notice(PAGE, ui_state.Notice("error", problems_text("Nothing was saved", exc.problems)))
        return
    except DiskFull as exc:  # a half-written copy was removed
        ui_state.post_notice(PAGE, ui_state.Notice("error", problems_text("Nothing was saved", [str(exc)])))
        return
    ui_state.set_mined_rules(path, None)  # saved: the rules table above now lists them
    if bundled:
        ui_state.open_pack(name)
    else:
        ui_state.forget_pack(path)
    ui_state.post_notice(PAGE, ui_state.Notice("success", saved_text(name, saved)))


def saved_text(name: str, saved: SavedRules) -> str:
    text = f"Saved {counted(len(saved.added), 'rule')} into pack **{md_text(name)}** (rules.jsonl)."
    if saved.duplicates:
        text += f" Skipped {counted(len(saved.duplicates), 'rule')} it already had."
    return text


def recomputed(path: str, pack: Pack) -> None:
    with st.spinner("Walking every rule body through the graph…"):
        rows = packs.statistics_rows(ui_state.knowledge_graph(path), pack.rules)
    cut = [r["id"] for r in rows if r.get("note")]  # recounts stopped by the time limit: not drift
    if cut:
        st.info(f"{len(cut)} rules were not fully recomputed in time: {md_text(', '.join(cut))}")
    drift = [r["id"] for r in rows if not r["matches"] and r["id"] not in cut]
    if drift:
        st.warning(f"{len(drift)} of {len(rows)} rules differ from their stored values: {md_text(', '.join(drift))}")
    elif len(rows) == 1:
        st.success("The rule matches its stored support and confidence.")
    else:
        st.success(f"All {len(rows)} rules match their stored support and confidence.")
    st.dataframe(rows, hide_index=True, width="stretch", key=f"{PAGE}.statistics", height=table_height(len(rows)),
                 column_order=[c for c in rows[0] if c != "rule"], column_config={
        "stored confidence": st.column_config.NumberColumn(format="%.3f"),
        "confidence": st.column_config.NumberColumn("recomputed confidence", format="%.3f"),
        "support": st.column_config.NumberColumn("recomputed support"),
    })


def table_height(rows: int, most: int = 600) -> int:
    """Tall enough for every row up to `most` pixels (Streamlit's default shows about ten)."""
    return min(most, 35 * (rows + 1) + 3)


# ---- Build a pack --------------------------------------------------------------------------------


def build() -> None:
    st.markdown("Upload files to make a new pack. Text, Markdown, HTML and PDF become documents; "
                "a .jsonl holds document records; .tsv/.csv rows `head, relation, tail[, time]` become triples "
                "(or documents, with CSV text columns); a .json gives the items a JSON path selects.")
    with st.form(f"{PAGE}.build"):
        st.text_input("Pack name", key=f"{PAGE}.build_name", max_chars=64, placeholder="my-notes",
                      help="Letters, digits, '-' and '_'; it becomes the pack's folder name.")
        st.file_uploader("Files", type=[s.lstrip(".") for s in ALLOWED_SUFFIXES], accept_multiple_files=True,
                         key=f"{PAGE}.uploads", max_upload_size=MAX_UPLOAD_MB,
                         help=f"Up to {MAX_UPLOAD_MB} MB per file.")
        with st.expander("Splitting, CSV and JSON"):
            build_options()
        st.form_submit_button("Build", type="primary", on_click=build_clicked)


def build_options() -> None:
    left, mid, right = st.columns(3)
    left.selectbox("Splitter", ["", *SPLITTERS], key=f"{PAGE}.splitter",
                   format_func=lambda s: s or "ragscope paragraphs (default)",
                   help="A LangChain text splitter; each piece it cuts is one retrieval chunk.")
    mid.number_input("Chunk size", 0, 100_000, 0, key=f"{PAGE}.chunk_size",
                     help="Characters (recursive, sentence) or word pieces (tokens, at most 256); 0: its default.")
    right.number_input("Chunk overlap", -1, 10_000, -1, key=f"{PAGE}.chunk_overlap", help="-1: the default.")
    left, mid, right = st.columns(3)
    left.text_input("CSV text columns", key=f"{PAGE}.csv_columns", placeholder="body, summary",
                    help="Each .csv row becomes a document of these columns; empty: .csv files hold triples.")
    mid.text_input("CSV metadata columns", key=f"{PAGE}.csv_metadata", placeholder="title",
                   help="Kept with each row; a 'title' column titles it.")
    right.text_input("JSON path", key=f"{PAGE}.json_path", placeholder=".items[]",
                     help="Which items of a .json become documents: a string, or an object's 'text' and 'title'.")


def build_form_options() -> IngestOptions:
    """The form's choices; the engine checks them (an out-of-range size is an error like any upload problem)."""
    state = st.session_state
    splitter = state.get(f"{PAGE}.splitter") or ""

    def names(key: str) -> tuple[str, ...]:
        return tuple(c.strip() for c in state.get(f"{PAGE}.{key}", "").split(",") if c.strip())

    return IngestOptions(
        splitter=SplitterConfig(splitter, int(state.get(f"{PAGE}.chunk_size", 0)),
                                int(state.get(f"{PAGE}.chunk_overlap", -1))) if splitter else None,
        csv_columns=names("csv_columns"), csv_metadata=names("csv_metadata"),
        json_path=state.get(f"{PAGE}.json_path", "").strip())


def build_clicked() -> None:
    """The Build button's callback: it runs before the sidebar is drawn, so the new pack can become the current one."""
    name = st.session_state[f"{PAGE}.build_name"].strip()
    uploads = [Upload(f.name, f.getvalue()) for f in st.session_state[f"{PAGE}.uploads"] or []]
    bar = st.progress(0.0, text="Starting…")
    try:
        target = packs.build_from_uploads(uploads, name, ui_state.settings(), ui_state.available_packs(),
                                          progress=lambda fraction, text: bar.progress(fraction, text=text),
                                          options=build_form_options())
    except PackError as exc:  # IngestError too: every problem, and nothing was written
        ui_state.post_notice(PAGE, ui_state.Notice("error", problems_text("Nothing was written", exc.problems)))
        return
    except DiskFull as exc:  # the half-written pack was removed
        ui_state.post_notice(PAGE, ui_state.Notice("error", problems_text("Nothing was written", [str(exc)])))
        return
    finally:
        bar.empty()
    pack = ui_state.pack(str(target))
    ui_state.open_pack(name)
    st.session_state[f"{PAGE}.tab"] = "Overview"  # open it: its counts and description first
    ui_state.post_notice(PAGE, ui_state.Notice("success", (
        f"Pack **{md_text(name)}** is ready: {counted(len(pack.documents), 'document')}, "
        f"{counted(len(pack.triples), 'triple')}. It is now the current pack.")))


def counted(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def problems_text(outcome: str, problems: list[str]) -> str:
    """Every problem as a Markdown list, capped so a broken upload cannot flood the page."""
    shown = [f"- {md_text(p)}" for p in problems[:MAX_PROBLEMS_SHOWN]]
    more = len(problems) - len(shown)
    return "\n".join([f"{outcome} — fix {'this problem' if len(problems) == 1 else 'these problems'} and try again:",
                      "", *shown, *([f"- … and {more} more"] if more > 0 else [])])


# ---- Index ---------------------------------------------------------------------------------------


def index(workbench: Workbench) -> None:
    status = st.container()
    if st.button("Sync index", key=f"{PAGE}.sync", type="primary",
                 help="Embed new or changed chunks and drop removed ones (incremental)"):
        sync(workbench)
    with status:
        try:
            with st.spinner("Opening the index…"):
                found = packs.index_status(workbench.retrieval)
        except Exception as exc:  # noqa: BLE001 — a Chroma server that is down must not take the page down
            st.error(md_text(f"The index cannot be opened: {failure_text(exc)}"))
            return
        index_status(found)


def index_status(found: packs.IndexStatus) -> None:
    left, right = st.columns(2)
    left.metric("Chunks in the pack", found.chunks)
    right.metric("Chunks in the index", found.indexed, delta=found.indexed - found.chunks or None, delta_color="off")
    st.caption(f"Collection `{found.name}` · encoder `{found.encoder}` · {md_text(found.where)}")
    if found.indexed == found.chunks:
        st.success("The index holds as many chunks as the pack.")
    else:
        st.warning("The index and the pack differ; press **Sync index** (the first search also syncs it).")


def sync(workbench: Workbench) -> None:
    bar = st.progress(0.0, text="Comparing the pack with the index…")
    try:
        report = packs.sync_index(workbench.pack, workbench.retrieval.settings, shared=workbench.retrieval,
                                  progress=lambda p: bar.progress(p.done / max(p.total, 1),
                                                                  text=f"Embedding {p.describe()}"))
    except Exception as exc:  # noqa: BLE001 — encoder or Chroma failures are shown, never raised
        bar.empty()
        st.error(md_text(f"Syncing failed: {failure_text(exc)}"))
        return
    bar.progress(1.0, text="Index synced")
    st.success(f"Synced: {report.added} chunks embedded, {report.removed} removed, {report.kept} unchanged.")


def failure_text(exc: Exception) -> str:
    """Our errors (a full disk, a server that does not answer) say what to do; others show their type too."""
    return str(exc) if isinstance(exc, RagscopeError) else f"{type(exc).__name__}: {exc}"


# ---- the page ------------------------------------------------------------------------------------


def main() -> None:
    workbench = ui_state.current_workbench()
    path = ui_state.selection().pack_path
    st.header("Knowledge")
    notice = ui_state.pop_notice(PAGE)
    if notice is not None:  # from a callback: a pack was built or rules were saved, or why not
        (st.success if notice.level == "success" else st.error)(notice.text)
    tabs = st.tabs(TABS, key=f"{PAGE}.tab", on_change="rerun")
    # Lazy tabs: only the open one runs, so the index is not opened just to read the overview.
    sections: list[Callable[[], None]] = [
        (lambda: overview(workbench.pack)), (lambda: documents(workbench)), (lambda: graph(path)),
        (lambda: rules(path, workbench.pack)), build, (lambda: index(workbench)),
    ]
    for tab, section in zip(tabs, sections):
        if tab.open:
            with tab:
                section()


main()
