"""Retrieval features r, γ, ζ follow the spec's formulas (§2.1) on hand-made vectors."""

from __future__ import annotations

import numpy as np
import pytest

from engine.methods.r2ag.features import FEATURE_ORDER, list_features


def unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


QUERY = np.array([1.0, 0.0, 0.0])
DOCS = np.array([[0.6, 0.8, 0.0], [1.0, 0.1, 0.0], [0.8, 0.0, 0.6]])  # r order: doc 1, doc 2, doc 0


def test_features_sort_by_cosine_and_follow_the_documented_formulas():
    f = list_features(QUERY, DOCS)
    assert f.order == (1, 2, 0)
    x = np.stack([unit(DOCS[i]) for i in f.order])
    r = x @ QUERY
    assert f.r == pytest.approx(tuple(r))
    assert f.gamma[0] == 1.0  # the code's γ_1
    assert f.gamma[1] == pytest.approx(float(x[1] @ x[0]))  # one predecessor: its own direction
    w = np.exp(r[:2]) / np.exp(r[:2]).sum()
    assert f.gamma[2] == pytest.approx(float(x[2] @ unit(w @ x[:2])))
    s = [float(x[i] @ x[i + 1]) for i in range(2)]
    assert f.zeta == pytest.approx((s[0], (s[0] + s[1]) / 2, s[1]))


def test_the_feature_matrix_uses_the_paper_order_r_gamma_zeta():
    f = list_features(QUERY, DOCS)
    assert FEATURE_ORDER == ("r", "gamma", "zeta")
    assert f.matrix().shape == (3, 3) and f.matrix()[:, 1] == pytest.approx(f.gamma)


def test_the_retriever_order_is_kept_when_asked_and_scale_does_not_matter():
    f = list_features(QUERY * 5, DOCS * 3, by_relevance=False)
    assert f.order == (0, 1, 2) and f.r[0] == pytest.approx(0.6)


def test_one_document_and_no_documents():
    one = list_features(QUERY, DOCS[:1])
    assert one.gamma == (1.0,) and one.zeta == (1.0,)
    assert list_features(QUERY, np.zeros((0, 3))).matrix().shape == (0, 3)
