"""Claims of notebook 01 · deep-learning basics, asserted on its results JSON.

Every claim below holds at smoke sizes (2 epochs on 2,000 images for SGD vs Adam; 15 epochs on 500
images for overfitting, validated on the last 500 training-split images) as well as at learner
sizes; the margins were checked over several seeds.
"""

from claims import common
from helpers.nn import DENSE_TOLERANCE  # float32 rounding only: TF32 differs by 6e-4 or more (tests/test_tf32.py)

RESNET50_PARAMS = 25_636_712  # keras.applications.ResNet50(weights=None).count_params()


def check(run) -> None:
    common.dispatch(run, __name__)


def shared(run):
    r = run.results

    # A Dense layer is relu(X W + b): with TF32 off (the default rounds a GPU's float32 inputs to TF32 from
    # compute capability 8.0 on), Keras and NumPy agree to float32 rounding. Turned off after earlier GPU ops, the
    # setting still reaches this matmul (cuBLAS reads it at each call, xla/stream_executor/cuda/cuda_blas.cc); only a
    # convolution autotuned earlier could keep TF32, and the comparison has none, so this bound holds on an A100.
    assert r["layer_tf32"] is False, "the Dense vs NumPy comparison ran with TF32 on"
    assert r["layer_max_abs_error"] < DENSE_TOLERANCE, r["layer_max_abs_error"]

    # Hand-written backpropagation matches tf.GradientTape (float64: about 1e-16).
    assert 0 <= r["grad_max_abs_error"] < 1e-4, r["grad_max_abs_error"]
    first, last = r["hand_gd_losses"]
    assert last < first, f"gradient descent with hand gradients did not lower the loss: {first} -> {last}"

    # Vanishing gradients: the sigmoid stack's first layer gets a far smaller gradient than ReLU's,
    # and skip connections restore it in the 20-layer sigmoid stack.
    sig, relu = r["grad_norms_10_layers"]["sigmoid"], r["grad_norms_10_layers"]["relu"]
    assert len(sig) == len(relu) == 10
    assert sig[-1] / sig[0] > 1e3, f"sigmoid gradient does not vanish towards the input: {sig}"
    assert r["relu_first_layer_grad_norm"] > 100 * r["sigmoid_first_layer_grad_norm"]
    assert r["residual_first_layer_grad_norm"] > 1e3 * r["plain_first_layer_grad_norm"], (
        r["plain_first_layer_grad_norm"], r["residual_first_layer_grad_norm"])

    # SGD vs Adam, same model, start and budget: both learn, Adam ends lower.
    losses = r["optimizer_losses"]
    assert losses["SGD"][0] == losses["Adam"][0], "the two runs did not start from the same weights"
    assert losses["momentum SGD"][0] == losses["SGD"][0]
    assert len(losses["SGD"]) == len(losses["Adam"]) == len(losses["momentum SGD"]) == r["epochs"] + 1
    assert r["sgd_final_loss"] < losses["SGD"][0] and r["adam_final_loss"] < losses["Adam"][0]
    assert r["sgd_momentum_final_loss"] == losses["momentum SGD"][-1] < losses["momentum SGD"][0]
    # "With these learning rates" Adam beats plain SGD; momentum is only compared, never claimed worse.
    assert r["adam_final_loss"] < r["sgd_final_loss"], (r["adam_final_loss"], r["sgd_final_loss"])

    # Overfitting seen, then reduced by dropout (0.5) + L2 (1e-4); the gap fell by at least 0.026 over
    # seeds 0-2 at smoke and learner sizes. What validation accuracy did is printed, not claimed.
    assert r["overfit_gap"] > 0.08, f"the plain wide network does not overfit: gap {r['overfit_gap']}"
    assert r["regularized_gap"] < r["overfit_gap"], (r["regularized_gap"], r["overfit_gap"])
    train_acc, val_acc = r["overfit_accuracy"]["plain"]
    assert train_acc > 0.9 and abs(train_acc - val_acc - r["overfit_gap"]) < 1e-9

    # ResNet50: exact parameter count; FLOPs per image = 2 x ~3.86 G multiply-adds (He et al. 2016: 3.8 G).
    assert r["resnet50_params"] == RESNET50_PARAMS, r["resnet50_params"]
    assert 7.5e9 < r["resnet50_flops_per_image"] < 8.3e9, r["resnet50_flops_per_image"]
    assert r["resnet50_flops_per_image"] == 2 * r["resnet50_macs_per_image"]
    assert r["resnet50_other_ops"] < 0.01 * r["resnet50_flops_per_image"]  # "0.5 %" of the work
    device = r["resnet50_device"]
    assert device == ("GPU" if r["gpu_count"] else "CPU"), (device, r["gpu_count"])
    rate = r[f"resnet50_{device.lower()}_images_per_s"]
    assert rate > 0 and r["resnet50_forward_s"] > 0
    expected_gflops = r["resnet50_flops_per_image"] * rate / 1e9
    assert abs(r["resnet50_achieved_gflops"] - expected_gflops) < 1e-6 * expected_gflops
    assert r["t4_peak_gflops"] == {"fp32": 8100.0, "fp16_tensor": 65000.0,
                                   "source": "NVIDIA T4 Tensor Core GPU datasheet"}
    # ImageNet epoch: the FP16 peak is faster than the FP32 peak.
    assert r["imagenet_epoch_hours_t4_fp16_peak"] < r["imagenet_epoch_hours_t4_fp32_peak"]

    assert r["exercises_solved"] is True
    text = run.outputs_text()
    assert "datasheet peak" in text and "only a fraction of a peak" in text
    assert "times smaller than ReLU's" in text and "IQR: the spread of the middle half" in text
    # TF32 is back at TensorFlow's default after the comparison, and its state is printed beside the rate.
    assert r["tf32_enabled"] is True, "TF32 was not restored after the Dense vs NumPy comparison"
    assert r["tf32_state"].startswith("TF32 ") and r["tf32_state"] in text, r["tf32_state"]
    assert "With TF32 off, Keras and NumPy differ by at most" in text
    assert "With these learning rates" in text and "Validation accuracy" in text
    assert run.stderr_text() == "", run.stderr_text()
    assert "Traceback" not in text


def on_cpu(run):
    r = run.results
    # A CPU is far below a T4's datasheet peak, and an ImageNet epoch at that peak beats this CPU's rate.
    assert r["resnet50_achieved_gflops"] < r["t4_peak_gflops"]["fp32"]
    assert r["imagenet_epoch_hours_t4_fp32_peak"] < r["imagenet_epoch_hours_here"]
    text = run.outputs_text()
    assert "measured on this CPU" in text
    assert r["tf32_state"].startswith("TF32 allowed but unused: no GPU,"), r["tf32_state"]


def on_gpu(run):
    r = run.results
    assert r["resnet50_gpu_images_per_s"] > 0
    text = run.outputs_text()
    assert "measured on this GPU" in text
    assert "no GPU," not in r["tf32_state"], r["tf32_state"]
