"""What every command writes: stdout to a closed pipe or a full disk, and the files ``plot -o`` and
``convert -o`` write (whole or not at all), and the arguments that size them (``--dpi``, ``-o``'s extension,
``sample -n``, the numbers ``convert`` reads from an old RLlib YAML). Exit codes 0/1/2, never a traceback."""

from __future__ import annotations

import errno
import io
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlsweep.cli import DPI_RANGE, main
from tests.conftest import TINY_SPEC
from tests.experiments import new_experiment, write_trial

OLD_PPO = {"cartpole": {"run": "PPO", "env": "CartPole-v1", "stop": {"timesteps_total": 20000},
                        "config": {"lr": 0.0003, "num_sgd_iter": 2, "train_batch_size": 1000}}}


def _rlsweep(*args: Any, stdout: Any) -> subprocess.CompletedProcess[str]:
    """The installed command in a new process (the only way to see the interpreter's flush at exit)."""
    script = Path(sys.executable).with_name("rlsweep")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "rlsweep.cli"]
    return subprocess.run([*command, *map(str, args)], stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300)


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = new_experiment(tmp_path_factory.mktemp("outputs") / "exp", sweep_id="outputs")
    for trial_id, lr, returns in (("aaaa", 1e-4, [10, 40, 70]), ("bbbb", 1e-3, [20, 60, 90, 120]), ("cccc", 2e-3, [5, 8])):
        write_trial(root, trial_id, returns, config={"training.lr": lr, "rl_module.model_config.fcnet_hiddens": [16]})
    return root


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("spec") / "spec.yaml"
    path.write_text(yaml.safe_dump(TINY_SPEC))
    return path


def _leftovers(folder: Path) -> list[str]:
    """Temporary files a write left behind."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _complete(path: Path, fmt: str) -> bool:
    """A whole file of its format: the bytes it ends with, where the format has an end marker."""
    data = path.read_bytes()
    ends = {"png": b"IEND\xaeB`\x82", "pdf": b"%%EOF", "svg": b"</svg>"}
    return bool(data) and data.rstrip().endswith(ends.get(fmt, b""))


# --- stdout: a closed pipe, a full disk, for every command -----------------------------------------------


def test_a_closed_pipe_ends_schema_and_sample_quietly(spec_file):
    """`rlsweep schema | head -1`, `rlsweep sample SPEC | head -1`: the reader is gone; no traceback, exit 1."""
    for args in (["schema", "--indent"], ["sample", spec_file, "-n", "3"]):
        read, write = os.pipe()
        os.close(read)  # the reader left before the command wrote a byte
        try:
            done = _rlsweep(*args, stdout=write)
        finally:
            os.close(write)
        assert (done.returncode, done.stderr) == (1, ""), args


def test_a_full_disk_or_a_closed_stdout_is_one_line_and_exit_1():
    """`rlsweep schema > /dev/full`: one line naming the failure, and nothing at the interpreter's exit;
    `rlsweep schema >&-` (Python makes stdout None and print() silent): said, not exit 0."""
    with open("/dev/full", "w") as full:
        done = _rlsweep("schema", stdout=full)
    assert (done.returncode, done.stderr) == (1, "error: cannot write output: No space left on device\n")
    script = Path(sys.executable).with_name("rlsweep")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "rlsweep.cli"]
    done = subprocess.run(["sh", "-c", '"$@" >&-', "sh", *command, "schema"], stderr=subprocess.PIPE, text=True, timeout=300)
    assert (done.returncode, done.stderr) == (1, "error: cannot write output: standard output is closed\n")


class _Failing(io.RawIOBase):
    """A stream whose writes fail with ``error`` (EPIPE: a closed pipe; ENOSPC: a full disk)."""

    def __init__(self, error: int) -> None:
        self.error: int | None = error

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if self.error is not None:
            raise OSError(self.error, os.strerror(self.error))
        return len(data)


@pytest.mark.parametrize("error", [errno.EPIPE, errno.ENOSPC], ids=["closed pipe", "full disk"])
def test_every_command_reports_a_failed_stdout_once(error, experiment, spec_file, tmp_path, monkeypatch, capsys):
    """The guard is in main, so it holds for every command's output, argparse's --help among them."""
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump(OLD_PPO))
    commands = [["schema"], ["--help"], ["sample", str(spec_file), "-n", "2", "--json"],
                ["plot", str(experiment), "-o", str(tmp_path / "c.png")], ["status", str(experiment)],
                ["best", str(experiment), "--json"], ["convert", str(old)]]
    for command in commands:
        raw = _Failing(error)
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8"))
        try:
            code = main(command)
        finally:
            raw.error = None  # let the wrapper close cleanly
        assert code == 1, command
        err = capsys.readouterr().err
        assert "Traceback" not in err
        message = "error: cannot write output: No space left on device\n"
        assert err.endswith(message) if error == errno.ENOSPC else message not in err, (command, err)


def test_text_the_terminal_cannot_encode_is_escaped_not_a_crash(experiment, tmp_path, monkeypatch):
    """A terminal in an ASCII locale and a file name in another script: the name is printed escaped."""
    ascii_out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", ascii_out)
    assert main(["plot", str(experiment), "-o", str(tmp_path / "courbe-\u00e9t\u00e9.png")]) == 0
    ascii_out.flush()
    assert ascii_out.buffer.getvalue().decode("ascii").endswith("courbe-\\xe9t\\xe9.png\n")
    assert (tmp_path / "courbe-\u00e9t\u00e9.png").exists()


# --- plot ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dpi", [0, -5, 9, 2401, 100000])
def test_plot_refuses_a_dpi_out_of_range_naming_it(dpi, experiment, tmp_path, capsys):
    assert main(["plot", str(experiment), "--dpi", str(dpi), "-o", str(tmp_path / "x.png")]) == 2
    assert capsys.readouterr().err == f"--dpi: must be in [10, 2400] dots per inch, got {dpi}\n"
    assert not (tmp_path / "x.png").exists()


def test_plot_refuses_a_format_matplotlib_cannot_write_before_drawing(experiment, tmp_path, capsys):
    assert main(["plot", str(experiment), "-o", str(tmp_path / "x.xyz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("-o: matplotlib cannot write .xyz files; name one of ") and ".png" in err and ".svg" in err
    assert list(tmp_path.iterdir()) == []


def test_plot_refuses_a_folder_or_a_missing_folder_as_o(experiment, tmp_path, capsys):
    assert main(["plot", str(experiment), "-o", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert main(["plot", str(experiment), "-o", str(tmp_path / "nope" / "x.png")]) == 2
    assert f"the folder {tmp_path / 'nope'} does not exist" in capsys.readouterr().err
    assert not (tmp_path / "nope").exists()


def test_plot_to_dev_full_exits_1_naming_it(experiment, capsys):
    assert main(["plot", str(experiment), "-o", "/dev/full"]) == 1
    assert capsys.readouterr().err == "error: cannot write /dev/full: No space left on device\n"


def test_plot_into_a_folder_it_may_not_write_exits_1_naming_the_path(experiment, tmp_path, capsys):
    if os.geteuid() == 0:
        target = Path("/sys/rlsweep-plot.png")  # root may write anywhere but here
    else:
        (tmp_path / "ro").mkdir(mode=0o500)
        target = tmp_path / "ro" / "x.png"
    assert main(["plot", str(experiment), "-o", str(target)]) == 1
    assert capsys.readouterr().err == f"error: cannot write {target}: Permission denied\n"
    assert not target.exists()


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_partial_one(experiment, tmp_path, monkeypatch, capsys):
    """A disk that fills while the PNG is written: the file named keeps its old bytes, no temporary file
    stays, exit 1."""
    out = tmp_path / "c.png"
    out.write_bytes(b"the old plot")
    real_fdopen = os.fdopen

    class Full(io.RawIOBase):
        def __init__(self, fd: int) -> None:
            self.fd = fd

        def writable(self) -> bool:
            return True

        def write(self, data: Any) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def fileno(self) -> int:
            return self.fd

        def close(self) -> None:
            os.close(self.fd)
            super().close()

    monkeypatch.setattr(os, "fdopen", lambda fd, mode="r", *a, **k: io.BufferedWriter(Full(fd)) if "w" in mode else real_fdopen(fd, mode, *a, **k))
    assert main(["plot", str(experiment), "-o", str(out)]) == 1
    assert capsys.readouterr().err == f"error: cannot write {out}: No space left on device\n"
    assert out.read_bytes() == b"the old plot"
    assert _leftovers(tmp_path) == []


def test_a_raster_too_large_to_render_is_refused_with_the_dpi_that_fits():
    """A wide figure (the parallel plot of many parameters) at a dpi in range can still exceed what matplotlib
    renders: --dpi is refused with the most this figure takes, and a vector format is not limited."""
    from matplotlib.figure import Figure

    from rlsweep.cli import _check_pixels
    from rlsweep.errors import UsageError

    wide = Figure(figsize=(40, 5))
    with pytest.raises(UsageError, match=r"^--dpi: this figure is 40 x 5 inches: at 2400 dpi that is 96,000 x 12,000 "
                                         r"pixels, .* use --dpi 1158 or less, or a vector format"):
        _check_pixels(wide, 2400, "png")
    _check_pixels(wide, 1158, "png")
    _check_pixels(wide, 2400, "svg")


def _formats() -> list[str]:
    from matplotlib.backend_bases import FigureCanvasBase

    return sorted(FigureCanvasBase.get_supported_filetypes())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    dpi=st.one_of(st.integers(max_value=DPI_RANGE[0] - 1), st.integers(min_value=DPI_RANGE[1] + 1), st.integers(10, 120)),
    extension=st.one_of(st.sampled_from(_formats()), st.text("abcxyzPNG0.-~", max_size=5), st.just("")),
    kind=st.sampled_from(["curves", "parallel", "importance", "confirmation"]),
)
def test_plot_exits_0_only_with_the_whole_file_written(experiment, capsys, dpi, extension, kind):
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / (f"plot.{extension}" if extension else "plot")
        code = main(["plot", str(experiment), "--kind", kind, "--dpi", str(dpi), "-o", str(out)])
        err = capsys.readouterr().err
        assert code in (0, 1, 2) and "Traceback" not in err
        fmt = out.suffix.lower().removeprefix(".") or "png"
        if code == 0:
            assert _complete(out, fmt), (fmt, out.stat().st_size)
        else:
            assert err.count("\n") == 1 and not out.exists(), err
            if not DPI_RANGE[0] <= dpi <= DPI_RANGE[1]:
                assert err.startswith("--dpi: ") and str(dpi) in err
        assert _leftovers(Path(folder)) == []


# --- convert --------------------------------------------------------------------------------------------


ODD_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8), st.none(), st.booleans(),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.integers(-(2**63), 2**63 - 1), st.integers(1, 10**6),
)
#: Where convert reads a number, or lists the value as not converted: paths in the experiment.
NUMBERS = [("stop", "timesteps_total"), ("stop", "num_env_steps_sampled_lifetime"), ("stop", "episode_reward_mean"),
           ("num_samples",), ("keep_checkpoints_num",), ("stop", "training_iteration")]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(NUMBERS), value=ODD_VALUES)
def test_convert_names_an_odd_number_in_the_old_file_or_lists_it(capsys, where, value):
    """Any value where convert reads a number: exit 0 with a whole spec written, or exit 2 naming the file,
    the key's path and the value, with nothing written; never a traceback."""
    document: Any = yaml.safe_load(yaml.safe_dump(OLD_PPO))
    parent = document["cartpole"]
    for key in where[:-1]:
        parent = parent[key]
    parent[where[-1]] = value
    with tempfile.TemporaryDirectory() as folder:
        old, out = Path(folder) / "old.yaml", Path(folder) / "new.yaml"
        old.write_text(yaml.safe_dump(document))
        value = yaml.safe_load(old.read_text())["cartpole"]
        for key in where:
            value = value[key]
        code = main(["convert", str(old), "-o", str(out)])
        err = capsys.readouterr().err
        assert code in (0, 2) and "Traceback" not in err, err
        whole = isinstance(value, int) and not isinstance(value, bool) and value >= 1 or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer() and value >= 1)
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        path = "cartpole." + ".".join(where)
        if code == 0:
            spec = yaml.safe_load(out.read_text())
            assert spec["name"] == "cartpole" and "budget" in spec
        if where[-1] in ("timesteps_total", "num_env_steps_sampled_lifetime", "num_samples") and not whole or (
                where[-1] == "episode_reward_mean" and not number):
            # Named with the file by convert, or by the YAML reader's own limits (an integer past 64 bits).
            assert code == 2 and (f"{old}: {path}: must be " in err or err.startswith(path)) and not out.exists(), err
        elif where[-1] == "timesteps_total" and whole and code == 0:
            assert spec["budget"]["env_steps"] == int(value)
        elif where[-1] in ("keep_checkpoints_num", "training_iteration") and code == 0:
            assert spec.get("checkpoint", {}).get("keep") == value or f"not converted: {where[-1]}" in err.replace(
                "stop.", ""), err
        assert _leftovers(Path(folder)) == []


def test_convert_o_refuses_a_folder_a_missing_folder_and_the_input_itself(tmp_path, capsys):
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump(OLD_PPO))
    assert main(["convert", str(old), "-o", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert main(["convert", str(old), "-o", str(tmp_path / "nope" / "new.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["convert", str(old), "-o", str(old)]) == 2
    assert "is the file being converted" in capsys.readouterr().err
    assert yaml.safe_load(old.read_text()) == OLD_PPO
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.yaml"]


def test_convert_to_dev_full_exits_1_naming_it(tmp_path, capsys):
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump(OLD_PPO))
    assert main(["convert", str(old), "-o", "/dev/full"]) == 1
    assert "error: cannot write /dev/full: No space left on device" in capsys.readouterr().err


def test_convert_reads_an_endless_file_no_further_than_a_specs_size(capsys):
    """`rlsweep convert /dev/zero` (a device has no size to check first): refused, not read to exhaustion."""
    assert main(["convert", "/dev/zero"]) == 2
    assert capsys.readouterr().err == "/dev/zero: the spec file holds more than 2,000,000 bytes; a spec is at most that\n"


def test_a_key_with_a_newline_stays_in_its_comment(tmp_path, capsys):
    """An old key or file name holding a line break must not end the header's comment and add YAML."""
    document = yaml.safe_load(yaml.safe_dump(OLD_PPO))
    document["cartpole"]["config"]["x\nbudget: {env_steps: 1}\ny"] = 1
    old, out = tmp_path / "old\nname: injected.yaml", tmp_path / "new.yaml"
    old.write_text(yaml.safe_dump(document))
    assert main(["convert", str(old), "-o", str(out)]) == 0, capsys.readouterr().err
    spec = yaml.safe_load(out.read_text())
    assert spec["budget"]["env_steps"] == 20000 and spec["name"] == "cartpole"


# --- sample -n ------------------------------------------------------------------------------------------


def test_sample_refuses_more_draws_than_the_searcher_makes_in_seconds(spec_file, capsys):
    from rlsweep.search_spaces import SEARCHERS

    most = SEARCHERS["ax"].max_samples
    assert main(["sample", str(spec_file), "-n", "10000", "--searcher", "ax"]) == 2
    assert capsys.readouterr().err == (f"-n: a dry run of searcher 'ax' draws at most {most:,} configs (so that it ends "
                                       "within seconds), got 10000\n")
    # Without --searcher, the spec's own searcher (optuna) sets the limit.
    assert main(["sample", str(spec_file), "-n", str(SEARCHERS["optuna"].max_samples + 1)]) == 2
    assert "searcher 'optuna' draws at most" in capsys.readouterr().err
    for n in ("0", "-3"):
        assert main(["sample", str(spec_file), "-n", n]) == 2
        assert capsys.readouterr().err == f"-n: must be >= 1 (a dry run of a sweep's first configs), got {n}\n"


def test_the_python_api_holds_a_dry_run_to_the_same_maximum(spec_file):
    from rlsweep import load_spec, sample
    from rlsweep.errors import UsageError

    spec = load_spec(str(spec_file), preflight=False)
    with pytest.raises(UsageError, match="^n: a dry run of searcher 'ax' draws at most 100 configs"):
        sample(spec, 10_000, searcher="ax")
    with pytest.raises(UsageError, match="^n: must be >= 1"):
        sample(spec, 0)


@pytest.mark.slow
@pytest.mark.parametrize("searcher", ["ax", "hyperopt", "optuna", "nevergrad", "bayesopt", "bohb", "random"])
def test_each_searchers_most_draws_end_well_within_a_minute(tmp_path, searcher):
    """The registry's maximum is honest: that many draws over 8 parameters end within 45 s (2 cores)."""
    import time

    from rlsweep import load_spec, sample
    from rlsweep.search_spaces import SEARCHERS

    document = {**TINY_SPEC, "scheduler": "fifo", "search_space": {
        f"training.{name}": {"uniform": [0.01, 0.99]}
        for name in ("gamma", "lambda_", "entropy_coeff", "vf_loss_coeff", "clip_param", "kl_coeff", "kl_target", "lr")}}
    spec = load_spec(document, preflight=False)
    started = time.perf_counter()
    configs = sample(spec, SEARCHERS[searcher].max_samples, searcher=searcher)
    assert len(configs) == SEARCHERS[searcher].max_samples
    assert time.perf_counter() - started < 45


@pytest.mark.parametrize("command", ["status", "best"])
def test_a_caller_that_runs_a_reader_command_in_process_gets_its_garbage_collector_back(experiment, command, capsys,
                                                                                         monkeypatch):
    """A reader command keeps what it read out of the cyclic collector's walks while it runs; called in a
    program that lives on (``main([...])``), it leaves nothing frozen behind, and the answer is the same."""
    import gc

    from rlsweep.analysis._load import Sweep

    frozen_while_answering = []
    best = Sweep.best

    def watched(self, *args, **kwargs):
        frozen_while_answering.append(gc.get_freeze_count())
        return best(self, *args, **kwargs)

    monkeypatch.setattr(Sweep, "best", watched)
    assert gc.get_freeze_count() == 0
    assert main([command, str(experiment)]) == 0
    assert frozen_while_answering and all(count > 0 for count in frozen_while_answering)
    assert gc.get_freeze_count() == 0
    first = capsys.readouterr().out
    assert main([command, str(experiment)]) == 0 and capsys.readouterr().out == first and "bbbb" in first
