"""The R2-Former: shapes, attention over documents (not the batch), padding, projection."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from engine.errors import CheckpointError  # noqa: E402
from engine.methods.r2ag.former import R2Former, R2FormerConfig, pad_batch, score  # noqa: E402


@pytest.fixture(scope="module")
def former():
    torch.manual_seed(0)
    return R2Former(R2FormerConfig(k=5, hidden_size=16)).eval()


def test_outputs_have_the_documented_shapes_and_attention_rows_sum_to_one(former):
    out = former(torch.rand(2, 5, 3))
    assert out.hidden.shape == (2, 5, 256) and out.logits.shape == (2, 5)
    assert out.attention.shape == (2, 1, 4, 5, 5)
    assert torch.allclose(out.attention.sum(-1), torch.ones(2, 1, 4, 5), atol=1e-5)
    assert former.project(out.hidden).shape == (2, 5, 16)


def test_documents_attend_to_each_other_at_batch_size_one(former):
    # the released code's batch_first bug attended over the batch axis: at B=1 nothing mixed
    features = torch.rand(1, 5, 3)
    changed = features.clone()
    changed[0, 4] += 1.0
    with torch.no_grad():
        assert not torch.allclose(former(features).logits[0, 0], former(changed).logits[0, 0])


def test_a_short_list_is_padded_and_padded_slots_get_no_attention(former):
    short = torch.rand(3, 3)
    out = score(former, short)
    assert out.logits.shape == (1, 3) and out.attention.shape == (1, 1, 4, 3, 3)
    batch, pad = pad_batch([short], 5)
    full = former(batch, pad)
    assert torch.all(full.attention[..., 3:] == 0)
    assert torch.allclose(full.logits[:, :3], out.logits, atol=1e-5)


def test_a_relevance_only_former_has_no_projection():
    with pytest.raises(CheckpointError, match="relevance only"):
        R2Former(R2FormerConfig(k=3)).project(torch.zeros(1, 3, 256))
