"""Render-only Streamlit helpers, one per step kind; they import only engine.trace."""
