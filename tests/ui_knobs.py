"""Knobs AppTests turn before asking, so a UI test checks the page, not the calibration policy."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def answer_every_guess(at: AppTest, methods: tuple[str, ...] = ()) -> AppTest:
    """min_confidence 0 on the parameter widgets of `methods` (all when empty) on the page: the offline
    best guess is shown however unsure (refusals below the threshold are tested in tests/test_calibration.py)."""
    for slider in at.slider:
        key = slider.key or ""
        if key.endswith(".min_confidence") and (not methods or key.split(".")[-2] in methods):
            slider.set_value(0.0)
    return at
