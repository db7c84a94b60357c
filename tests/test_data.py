"""Shipped data: hashes verified, shapes as documented, corrupt copies refused, no pickles."""

import shutil

import numpy as np
import pytest

from helpers import data


def test_every_shipped_file_matches_the_manifest():
    assert data.verify_all()
    listed = {line.split()[1] for line in (data.DATA_DIR / "MANIFEST").read_text().splitlines() if line.strip()}
    assert listed == set(data.FILES)


def test_fashion_subset_is_balanced_uint8_images():
    (x, y), (xt, yt) = data.load_fashion_mnist()
    assert x.shape == (10000, 28, 28) and xt.shape == (2000, 28, 28)
    assert x.dtype == np.uint8 and y.dtype == np.uint8
    assert np.bincount(y).tolist() == [1000] * 10 and np.bincount(yt).tolist() == [200] * 10
    assert len(data.FASHION_CLASSES) == 10 and x.max() > 200


def test_sms_spam_subset_has_both_labels():
    texts, labels = data.load_sms_spam()
    assert 4000 <= len(texts) == len(labels) <= 5000
    assert 0.05 < labels.mean() < 0.25 and all(isinstance(t, str) and t for t in texts)


def test_gpu_specs_have_a_source_per_row_and_known_t4_figures():
    specs = data.load_gpu_specs()
    assert len(specs) >= 10 and all(g["source"] for g in specs)
    t4 = next(g for g in specs if g["name"] == "Tesla T4")
    assert (t4["compute_capability"], t4["fp32_tflops"], t4["bf16_tensor"]) == (7.5, 8.1, False)
    assert all(g["bf16_tensor"] == (g["compute_capability"] >= 8.0) for g in specs)


@pytest.fixture
def data_copy(tmp_path):
    for name in (*data.FILES, "MANIFEST"):
        shutil.copy(data.DATA_DIR / name, tmp_path / name)
    return tmp_path


def test_a_file_with_one_flipped_byte_is_refused(data_copy):
    target = data_copy / "fashion_mnist_subset.npz"
    raw = bytearray(target.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    target.write_bytes(bytes(raw))
    with pytest.raises(data.DataIntegrityError, match="does not match its sha256.*git checkout data/"):
        data.load_fashion_mnist(data_copy)
    assert not data.verify_all(data_copy)
    data.load_sms_spam(data_copy)  # the untouched files still load


def test_missing_file_and_unknown_name_give_clear_errors(data_copy):
    (data_copy / "gpu_specs.csv").unlink()
    with pytest.raises(data.DataIntegrityError, match="missing"):
        data.load_gpu_specs(data_copy)
    with pytest.raises(ValueError, match="name='mnist.npz'.*use one of"):
        data.verify("mnist.npz")


def test_npz_holds_no_pickled_objects():
    with np.load(data.DATA_DIR / "fashion_mnist_subset.npz", allow_pickle=False) as f:
        assert all(f[k].dtype != object for k in f.files)
