# Two commands for learners (README): `make lab` and `make test`. Everything else is for instructors
# and developers. Each target creates .venv if missing and installs what it needs itself.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
RUNTIME_STAMP := $(VENV)/.installed-runtime
TEST_STAMP := $(VENV)/.installed-test
LAB_PORT ?= 8888
LAB_TOKEN ?=
LAB_ARGS ?=
LAB_DIR ?= notebooks
# One pytest worker more than cores: notebook kernels spend part of their time waiting (child processes starting,
# worker clusters, timeouts, a stated per-file wait), and the extra worker fills that time (2 cores: -n 3 and -n 4
# both took 4.5 min for make test, with the same tests passing).
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
# The hosted-like runtimes (tools/colab_env.py): Colab's is Python 3.13, Kaggle's 3.12; each interpreter is found, or
# (3.13 on Debian 12) built once from CPython's source in Debian's archive.
COLAB_PYTHON ?= python3.13
COLAB_VENV ?= .venv-colab
KAGGLE_PYTHON ?= python3.12
KAGGLE_VENV ?= .venv-kaggle
# The tests run with the network cut (a network namespace, or a socket guard where that is not allowed):
# nothing in the course may reach the internet at run time.
OFFLINE := $(PY) tools/offline.py --
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
TOKEN_FLAG := $(if $(LAB_TOKEN),--IdentityProvider.token=$(LAB_TOKEN),)

.PHONY: lab test test-full install-hosted install-browser test-browser test-colab test-kaggle book bench doctor lint strip clean install install-test kernel help tensorboard

help:
	@echo "make lab        set up .venv and open the course in JupyterLab"
	@echo "make install    set up .venv with the pinned packages only: no server, no tests (instructors, scripts)"
	@echo "make kernel     make install, then register the course's Jupyter kernel in .venv (no server)"
	@echo "make install-test  make install plus the pinned test tools"
	@echo "make test       set up .venv and run the whole test suite (smoke sizes, ~5 min on 2 cores)"
	@echo "make test-full  run every notebook at learner sizes and report its time"
	@echo "make test-browser  open every notebook in JupyterLab in headless Chromium and run all cells"
	@echo "make install-browser  only install what test-browser needs (Playwright, the site's packages, chromium)"
	@echo "make test-colab run every notebook alone on a Colab-like runtime (Python 3.13, TF 2.20, Keras 3.13, Colab's kernel)"
	@echo "make test-kaggle run every notebook alone on a Kaggle-like runtime (Python 3.12, TF 2.20, Keras 3.13, Kaggle's variables)"
	@echo "make test-hosted both of them in one session on both cores (what CI runs)"
	@echo "make install-hosted  only build the Colab-like and Kaggle-like venvs (.venv-colab, .venv-kaggle) those three use"
	@echo "make test-slurm  as root: a one-node SLURM cluster here; notebook 08's worker as a job, killed, requeued"
	@echo "make book       the course site: every notebook executed (learner sizes), built offline into build/book/"
	@echo "make student    classroom copies without the solutions, in build/student/ (make test-student runs them)"
	@echo "make test-student run every student copy unanswered: no error, every check 'Not answered yet'"
	@echo "make bench      measure notebook times, make test, the timer and matmul rates: benchmarks/RESULTS.md"
	@echo "make gpu-check  on a machine with an NVIDIA GPU: every notebook at learner sizes, claims asserted, a report to send"
	@echo "make doctor     readiness table of this machine (for instructors)"
	@echo "make lint       ruff on helpers, tests, tools and notebooks"
	@echo "make strip      strip outputs from notebooks before committing"
	@echo "make clean      remove .venv, the Colab-like venv, caches and the scratch folder"
	@echo "make tensorboard  open notebook 04's profiler traces in TensorBoard on 127.0.0.1 (TB_PORT=6006)"

$(PY):
	$(PYTHON) -m venv $(VENV)

$(RUNTIME_STAMP): requirements.txt pyproject.toml tools/install.py | $(PY)
	$(PY) tools/install.py
	@touch $@

$(TEST_STAMP): $(RUNTIME_STAMP) requirements-test.txt
	$(PY) tools/install.py --test
	@touch $@

install: $(RUNTIME_STAMP)
install-test: $(TEST_STAMP)

# The kernelspec is a file target: a target that needs it finds it made (and two run side by side do not race).
KERNEL_SPEC := $(VENV)/share/jupyter/kernels/python3/kernel.json
$(KERNEL_SPEC): $(RUNTIME_STAMP)
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (GPU DL course)" >/dev/null
	@touch $@

kernel: $(KERNEL_SPEC)

lab: kernel
	$(VENV)/bin/jupyter lab --notebook-dir=$(LAB_DIR) --ip=127.0.0.1 --port=$(LAB_PORT) \
		$(ROOT_FLAG) $(TOKEN_FLAG) $(LAB_ARGS)

doctor:
	@$(PYTHON) tools/preflight.py
	@$(MAKE) -s $(RUNTIME_STAMP) >/dev/null
	@LAB_PORT=$(LAB_PORT) $(PY) -c "import sys, helpers.readiness; sys.exit(helpers.readiness.main())"

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check helpers tests tools benchmarks notebooks

test: $(TEST_STAMP) kernel lint
	$(VENV)/bin/nbstripout --verify --keep-id --keep-count notebooks/*.ipynb
	COURSE_EXECUTED_DIR=$(CURDIR)/build/executed \
		$(OFFLINE) $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup -p tests.notebook_session \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider \
		-m "not slow and not browser and not colab" --doctest-modules notebooks tests helpers

# The learner's path in a real browser: Debian's chromium (installed with apt-get when missing and we are
# root) driven by Playwright. Playwright's own browser download is never used.
# install-browser: what test-browser needs beyond make test (the site's and Playwright's packages, Chromium).
install-browser: $(TEST_STAMP)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-browser.txt
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
		{ echo "chromium is missing: install Debian's chromium package (as root: apt-get install chromium)"; exit 1; }

test-browser: install-browser kernel
	@# The site test builds from the notebooks make test executed (build/executed) when they run today's code.
	site=$$($(PY) -c "import sys; sys.path[:0] = ['tools', 'tests']; import build_book, nbrun; \
		build_book.check_executed('build/executed', nbrun.present()); print('$(CURDIR)/build/executed')" 2>/dev/null); \
		echo "course site built from: $${site:-a smoke run of its own}"; \
		COURSE_SITE_EXECUTED=$$site $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup -m browser tests/test_browser*.py -p no:cacheprovider

# The hosted-runtime venvs (tools/colab_env.py), each a no-op when it is up to date; they need nothing of .venv.
# Colab's: Python 3.13 with Colab's pins and Colab's kernel (a shell that subclasses ZMQInteractiveShell, google.colab
# imported by the kernel's launcher). Kaggle's: Python 3.12 with Kaggle's pins and ipykernel's launcher.
install-hosted:
	$(PYTHON) tools/colab_env.py --runtime colab --python $(COLAB_PYTHON) --venv $(COLAB_VENV) >/dev/null
	$(PYTHON) tools/colab_env.py --runtime kaggle --python $(KAGGLE_PYTHON) --venv $(KAGGLE_VENV) >/dev/null

# Every notebook, opened alone in a fresh folder, fetches the course from a local bare clone and runs in smoke mode
# in the runtime's kernel; its claims are asserted. The pytest process runs in the Colab-like venv; each notebook's
# kernel is the runtime's own (HOSTED_KERNELS names the venvs whose kernelspecs the runs use).
HOSTED_KERNELS := COURSE_COLAB_VENV=$(abspath $(COLAB_VENV)) COURSE_KAGGLE_VENV=$(abspath $(KAGGLE_VENV))
test-colab: install-hosted
	$(HOSTED_KERNELS) COURSE_HOSTED_RUNTIMES=colab $(COLAB_VENV)/bin/pytest -n $(PYTEST_WORKERS) -p no:cacheprovider \
		tests/test_colab_runtime.py

# Kaggle: no google.colab, KAGGLE_KERNEL_RUN_TYPE set in the kernel as in every Kaggle kernel, a fresh working folder.
test-kaggle: install-hosted
	$(HOSTED_KERNELS) COURSE_HOSTED_RUNTIMES=kaggle $(COLAB_VENV)/bin/pytest -n $(PYTEST_WORKERS) -p no:cacheprovider \
		tests/test_colab_runtime.py

# Both hosted runtimes in one session (CI): every notebook on the Colab-like and on the Kaggle-like runtime, the
# workers kept busy across both lists instead of each list's last notebook running alone.
.PHONY: test-hosted
test-hosted: install-hosted
	$(HOSTED_KERNELS) COURSE_HOSTED_RUNTIMES=colab,kaggle $(COLAB_VENV)/bin/pytest -n $(PYTEST_WORKERS) \
		-p no:cacheprovider tests/test_colab_runtime.py

# SLURM as university GPU clusters run it: a one-node cluster started on this machine from Debian's packages
# (slurmctld, slurmd, slurm-client 22.05 and munge, installed with apt-get when missing and we are root), notebook 08's worker
# submitted with sbatch, one task killed, the requeued job resumed from its checkpoint (tests/test_slurm_job.py).
# Where it cannot run (not root, no apt-get) the test is skipped with the reason. Not under tools/offline.py: in a
# network namespace with only loopback, slurmctld cannot open its port ("Address family not supported by protocol").
.PHONY: test-slurm
test-slurm: $(TEST_STAMP)
	@command -v sbatch >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		slurmctld slurmd slurm-client munge >/dev/null; } || \
		echo "SLURM is missing and cannot be installed here (needs root and apt-get): the test will be skipped"
	$(PY) -m pytest -m slurm -rs -p no:cacheprovider tests/test_slurm_job.py

test-full: $(TEST_STAMP) kernel
	$(PY) -m pytest -n $(PYTEST_WORKERS) -m slow tests -s -p no:cacheprovider

strip: $(TEST_STAMP)
	$(VENV)/bin/nbstripout --keep-id --keep-count notebooks/*.ipynb

clean:
	rm -rf $(VENV) $(COLAB_VENV) $(KAGGLE_VENV) .pytest_cache .ruff_cache scratch

# Notebook 04's profiler traces in TensorBoard, served on this machine only (127.0.0.1; never --bind_all).
TB_PORT ?= 6006
TB_LOGDIR ?= $(or $(COURSE_SCRATCH),scratch)/04_input_pipelines/traces
tensorboard: $(RUNTIME_STAMP)
	@test -d "$(TB_LOGDIR)" || echo "No traces in $(TB_LOGDIR) yet: run notebooks/04_input_pipelines.ipynb first."
	$(VENV)/bin/tensorboard --logdir "$(TB_LOGDIR)" --host 127.0.0.1 --port $(TB_PORT)

# The course site, made by Sphinx with MyST-NB and sphinx-book-theme (book/conf.py, requirements-book.txt):
# every notebook executed with papermill at learner sizes, two at a time, then rendered with the network cut
# into build/book/ (index.html). BOOK_ARGS="--smoke" for quick sizes, "--executed DIR" for notebooks run elsewhere.
BOOK_STAMP := $(VENV)/.installed-book
$(BOOK_STAMP): $(TEST_STAMP) requirements-book.txt
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-book.txt
	@touch $@

book: $(BOOK_STAMP) kernel
	$(OFFLINE) $(PY) tools/build_book.py $(BOOK_ARGS)

# Measures the course on this machine and writes benchmarks/RESULTS.md (about half an hour on 2 cores).
bench: $(TEST_STAMP) kernel
	$(PY) benchmarks/run.py $(BENCH_ARGS)

# On a machine with an NVIDIA GPU: every notebook at learner sizes, its claims asserted, one report to send,
# benchmarks/gpu-runs/<gpu>-<date>.md and .json (tools/gpu_check.py). Without a GPU it says so and exits 2.
.PHONY: gpu-check
gpu-check: $(TEST_STAMP) kernel
	$(PY) tools/gpu_check.py $(GPU_CHECK_ARGS)

# Classroom copies: every notebook without its Solutions section, exercises and checks kept, in build/student/
# (tools/make_student.py). STUDENT_ARGS="--out DIR 03_cpu_vs_gpu_timing.ipynb" for another folder or some notebooks.
.PHONY: student test-student
student: $(RUNTIME_STAMP)
	$(PY) tools/make_student.py $(STUDENT_ARGS)

# Each student copy run as a learner who answers nothing (papermill, smoke sizes, network cut): no error, no stderr,
# every check "Not answered yet", the tally counts them. About a smoke run of the course; STUDENT_TESTS="-k 04_" for one.
test-student: $(TEST_STAMP) kernel
	COURSE_STUDENT_RUN=1 $(OFFLINE) $(PY) -m pytest -n $(PYTEST_WORKERS) -m notebook -p no:cacheprovider \
		tests/test_student.py $(STUDENT_TESTS)
