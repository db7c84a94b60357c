"""IPython start-up file: Keras resolves ``jit_compile="auto"`` in this kernel as it does on a GPU machine.

Keras 3 (keras/src/trainers/trainer.py, ``Trainer._resolve_auto_jit_compile``) returns False on a
CPU-only machine ("Disable XLA on CPU-only machines") and, when a GPU exists, False under a
``tf.distribute`` strategy and ``model_supports_jit(model)`` otherwise. This file replaces the method,
once ``keras.src.trainers.trainer`` is imported, by the GPU branch, so a CPU-only test run takes the
compile path a learner's Colab GPU takes. ``tests/nbrun.py`` puts it in a temporary IPython profile
(``IPYTHONDIR``) of the kernel; nothing else loads it.
"""

import os
import sys

TARGET = "keras.src.trainers.trainer"


def _resolve_as_on_a_gpu(module):
    def resolve(self):
        module._course_gpu_path_resolutions = getattr(module, "_course_gpu_path_resolutions", 0) + 1
        if self._distribute_strategy:  # "Disable XLA with tf.distribute"
            return False
        return module.model_supports_jit(self)

    module.Trainer._resolve_auto_jit_compile = resolve


class _PatchAfterImport:
    """A meta-path finder that lets the real loader run, then patches the module."""

    def find_spec(self, name, path=None, target=None):
        if name != TARGET:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _resolve_as_on_a_gpu(module)

        spec.loader.exec_module = exec_module
        return spec


if TARGET in sys.modules:
    _resolve_as_on_a_gpu(sys.modules[TARGET])
else:
    sys.meta_path.insert(0, _PatchAfterImport())
os.environ["COURSE_KERAS_JIT_AS_ON_GPU"] = "1"  # for the notebook's own record, and the tests
