"""Render-only Streamlit helpers, one per step kind; they import only engine.trace and engine.params
(tests/test_ui_imports.py)."""
