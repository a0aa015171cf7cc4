"""The application layer: plain-Python services (evaluations, runs, packs, models) that the CLI and the
Streamlit pages both call, so the two front ends share one way of doing each job and stay thin glue.
Nothing here imports streamlit."""
