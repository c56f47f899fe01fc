import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.bench import prompts as bp


def test_token_ids_length_range_and_seed():
    a = bp.token_id_prompts(3, 2048, seed=7, id_range=(10, 500))
    assert [len(p) for p in a] == [2048] * 3
    assert all(10 <= t < 500 for p in a for t in p)
    assert a == bp.token_id_prompts(3, 2048, seed=7, id_range=(10, 500))
    assert a != bp.token_id_prompts(3, 2048, seed=8, id_range=(10, 500))
    assert a[0] != a[1]  # distinct prompts: no prefix-cache shortcut


def test_token_ids_bad_range():
    with pytest.raises(ValueError):
        bp.token_id_prompts(1, 5, 0, (10, 10))
    with pytest.raises(ValueError):
        bp.token_id_prompts(1, 0, 0, (10, 20))


def test_text_prompts_words_and_seed():
    a = bp.text_prompts(2, 100, seed=1)
    assert [len(p.split()) for p in a] == [100, 100]
    assert a == bp.text_prompts(2, 100, seed=1) and a[0] != a[1]


def test_scale_text_words():
    assert bp.scale_text_words(1000, 2048, 4096) == 500
    assert bp.scale_text_words(1000, 2048, 1024) == 2000
    assert bp.scale_text_words(100, 110, 20, overhead_tokens=10) == 1000  # 0.1 tok/word
    assert bp.scale_text_words(100, 2048, None) == 100


def test_salt_rewrites_only_the_head():
    ids = bp.token_id_prompts(3, 64, seed=7)
    a = bp.salt_prompts(ids, 1)
    b = bp.salt_prompts(ids, 2)
    assert a == bp.salt_prompts(ids, 1)  # the salt, not chance, decides
    for p, q, orig in zip(a, b, ids):
        assert len(p) == len(orig) and p[bp.SALT_LENGTH:] == orig[bp.SALT_LENGTH:]
        assert p[:bp.SALT_LENGTH] != q[:bp.SALT_LENGTH]  # different runs: different first block
        assert all(10 <= t < 500 for t in p[:bp.SALT_LENGTH])
    assert len(bp.salt_prompts([[5, 6]], 3)[0]) == 2
    text = bp.text_prompts(2, 50, seed=1)
    salted = bp.salt_prompts(text, 9)
    for p, orig in zip(salted, text):
        assert len(p.split()) == 50 and p.split()[4:] == orig.split()[4:]
        assert p.split()[:4] != orig.split()[:4]


@pytest.mark.parametrize("out,ratio,bounds", [
    (128, 0.0, (128, 128)), (128, 0.5, (64, 192)), (10, 0.25, (7, 13)), (1, 0.9, (1, 2)), (3, 0.99, (1, 6))])
def test_output_len_bounds_follow_vllm_bench_serve(out, ratio, bounds):
    # vllm bench serve: low = max(1, floor(out * (1 - r))), high = ceil(out * (1 + r)), inclusive
    assert bp.output_len_bounds(out, ratio) == bounds


@pytest.mark.parametrize("ratio", [-0.1, 1.0, 2])
def test_output_len_bounds_reject_ratios_outside_0_1(ratio):
    with pytest.raises(ValueError, match="output_range_ratio"):
        bp.output_len_bounds(128, ratio)


def test_output_lengths_seeded_uniform_and_fixed_at_zero():
    assert bp.output_lengths(5, 128, 0.0, seed=1) == [128] * 5
    a = bp.output_lengths(2000, 100, 0.5, seed=7)
    assert a == bp.output_lengths(2000, 100, 0.5, seed=7)
    assert a != bp.output_lengths(2000, 100, 0.5, seed=8)
    assert min(a) == 50 and max(a) == 150  # both ends reachable, nothing outside
    assert abs(sum(a) / 2000.0 - 100) < 3  # mean stays output_len
