"""Experiment folders damaged the way a disk, a copy or a hand does it, read by every reader a user runs on
them (``status``, ``best``, ``export``, ``plot``, ``resume``, ``confirm``, a warm start from the folder): each
reads what is intact, names what is not in a warning (the file and what is wrong), never opens a FIFO,
changes nothing on disk (the export's lock file and the readers' rows index aside), and exits 1 where the answer is incomplete (a trial
missing or unreadable), 2 where the folder is not usable. ``resume`` and ``confirm`` refuse a damaged folder
before anything starts: here they never reach a real run (a stub stands where Ray would start)."""

from __future__ import annotations

import atexit
import contextlib
import errno
import io
import json
import os
import pickle
import shutil
import socket
import stat
import tempfile
import threading
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rlsweep.api
import rlsweep.sweep
from rlsweep import cli, store
from rlsweep.analysis._confirm import ConfirmationPlan, summarize
from rlsweep.seeds import SEED_PATH
from tests.experiments import new_experiment, write_trial

STATE = "experiment_state-2026-01-01_00-00-00.json"
#: Longer than any reader takes on these small folders, shorter than a test run's patience.
TIMEOUT_S = 60


class Reached(BaseException):
    """Raised where ``resume`` or ``confirm`` would start Ray: their checks let the folder through."""


def _trial(root: Path, trial_id: str) -> Path:
    return next(root.glob(f"train_{trial_id}_*"))


def _entry(root: Path, trial_id: str, status: object = "TERMINATED", **more: object) -> list[str]:
    trial = {"trial_id": trial_id, "status": status, "relative_logdir": _trial(root, trial_id).name, **more}
    return [json.dumps(trial), json.dumps({"num_failures": 0})]


def _sweep(root: Path) -> Path:
    """Two finished trials (``bbb`` the best under max) with checkpoints and recorded settings, Tune's state
    listing both and its tuner (a folder ``resume`` accepts), and a confirmation of both with its record."""
    new_experiment(root)
    for trial_id, returns, lr, seed in (("aaa", [10, 20, 30, 40], 0.01, 1), ("bbb", [5, 50, 60, 70], 0.001, 2)):
        config = {"training.lr": lr, "rl_module.model_config.fcnet_hiddens": [16]}
        write_trial(root, trial_id, returns, checkpoints=[2000, 4000], config=config,
                    settings={"config": config, "settings": {SEED_PATH: seed}, "seeds": [seed]})
    (root / STATE).write_text(json.dumps({"trial_data": [_entry(root, "aaa"), _entry(root, "bbb")]}))
    (root / store.TUNER_FILE).write_bytes(pickle.dumps({"tuner": "state"}))
    plan = ConfirmationPlan(
        candidates=("bbb", "aaa"), configs={"bbb": {"training.lr": 0.001}, "aaa": {"training.lr": 0.01}},
        tuning_values={"bbb": 70.0, "aaa": 40.0}, tuning_seeds={"bbb": [2], "aaa": [1]}, test_seeds=(1000, 1001, 1002),
        rule="avg-last-3", metric="return_mean", episodes=10,
    )
    result = summarize(plan, {"bbb": {1000: 9.0, 1001: 8.0, 1002: 9.5}, "aaa": {1000: 1.0, 1001: 2.0, 1002: 1.5}}, missing={})
    store.write_confirmation(root, {**result, "created": 1700000000.0})
    store.write_reproducibility(root, {"record": 1}, "# how to rerun\n")
    return root


def _snapshot(root: Path) -> dict[str, object]:
    """Every entry under ``root``: a file's bytes, else its kind (never opening a FIFO or a device)."""
    found: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        mode = path.lstat().st_mode
        key = str(path.relative_to(root))
        if key == store.MLFLOW_LOCK or key.startswith(store.CACHE_FILES):  # a lock and caches, none of the sweep's data
            continue
        found[key] = path.read_bytes() if stat.S_ISREG(mode) else ("link", os.readlink(path)) if stat.S_ISLNK(mode) else stat.S_IFMT(mode)
    return found


def _fifos(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if stat.S_ISFIFO(p.lstat().st_mode)]


def _nobody_reads(fifo: Path) -> bool:
    """Whether no process holds ``fifo`` open for reading (a writer's non-blocking open then fails)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        return exc.errno == errno.ENXIO
    os.close(fd)  # a reader was there: closing lets a reader blocked on it see the end and return
    return False


def run(root: Path, *argv: str) -> tuple[object, str, str]:
    """``rlsweep ARGV`` in a thread with a timeout: (exit code or "reached", stdout, stderr). A reader stuck on
    a FIFO fails the test (and is released)."""
    out, err, box = io.StringIO(), io.StringIO(), {}

    def target() -> None:
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                box["code"] = cli.main(list(argv))
        except Reached:
            box["code"] = "reached"
        except BaseException:  # noqa: BLE001 - any escape is what the test looks for
            box["traceback"] = traceback.format_exc()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(TIMEOUT_S)
    if thread.is_alive():
        for fifo in _fifos(root):
            _nobody_reads(fifo)
        pytest.fail(f"rlsweep {' '.join(argv)} did not finish in {TIMEOUT_S} s")
    assert "traceback" not in box, box.get("traceback")
    for fifo in _fifos(root):
        assert _nobody_reads(fifo), f"rlsweep {' '.join(argv)} left {fifo} open"
    return box["code"], out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def no_real_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ``resume`` and ``confirm`` would start Ray, a stub says their checks let the folder through."""

    def stub(*args: object, **kwargs: object) -> None:
        raise Reached

    monkeypatch.setattr(rlsweep.api, "resume", stub)
    monkeypatch.setattr(rlsweep.sweep, "run_confirmation", stub)


@pytest.fixture(scope="module")
def mlflow_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One MLflow store for the module's exports (making one takes seconds); each export its own experiment."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


READERS = ["status", "status --json", "best", "best --rule confirmed", "plot", "plot --kind confirmation", "export",
           "resume", "confirm"]


def _readers(root: Path, out: Path, uri: str, experiment: str) -> dict[str, tuple[str, ...]]:
    return {
        "status": ("status", str(root)),
        "status --json": ("status", str(root), "--json"),
        "best": ("best", str(root), "--rule", "last", "--json"),
        "best --rule confirmed": ("best", str(root), "--rule", "confirmed", "--json"),
        "plot": ("plot", str(root), "-o", str(out / "curves.png")),
        "plot --kind confirmation": ("plot", str(root), "--kind", "confirmation", "-o", str(out / "confirmation.png")),
        "export": ("export", str(root), "--tracking-uri", uri, "--experiment", experiment),
        "resume": ("resume", str(root)),
        "confirm": ("confirm", str(root), "--top", "1", "--seeds", "2"),
    }


# --- one odd entry in Tune's state ----------------------------------------------------------------------

ODD_ENTRIES: dict[str, Callable[[Path], object]] = {
    "an empty entry": lambda r: [],
    "an entry that is a text": lambda r: "trial",
    "an entry that is an object": lambda r: {"trial_id": "aaa"},
    "a trial id that is a list": lambda r: [json.dumps({"trial_id": ["aaa"], "status": "TERMINATED"}), "{}"],
    "a trial id that is a number": lambda r: [json.dumps({"trial_id": 5, "status": "TERMINATED"}), "{}"],
    "an empty trial id": lambda r: [json.dumps({"trial_id": "", "status": "TERMINATED"}), "{}"],
    "nested garbage": lambda r: [[[{"a": [1, {"b": None}]}]], [[]]],
    "a status that is a list": lambda r: _entry(r, "aaa", ["TERMINATED"]),
    "a status Tune does not know": lambda r: _entry(r, "aaa", "BOGUS"),
    "a status that is a number": lambda r: _entry(r, "aaa", 3),
    "failures that are not a count": lambda r: [_entry(r, "aaa")[0], json.dumps({"num_failures": [1]})],
    "a folder that is a path": lambda r: _entry(r, "aaa", relative_logdir="../../etc"),
    "a config that is a list": lambda r: _entry(r, "aaa", config=[1, 2]),
}


@pytest.mark.parametrize("odd", sorted(ODD_ENTRIES))
def test_one_odd_entry_in_tunes_state_is_named_and_every_reader_reads_the_rest(tmp_path, caplog, odd):
    root = _sweep(tmp_path / "exp")
    entries = [e for e in json.loads((root / STATE).read_text())["trial_data"] if "aaa" not in e[0]]
    (root / STATE).write_text(json.dumps({"trial_data": [ODD_ENTRIES[odd](root), *entries]}))
    before = _snapshot(root)
    code, out, err = run(root, "status", str(root))
    # aaa's own files still tell its state; the odd entry is named with the file it is in.
    assert code == 0 and "aaa" in out and "bbb" in out and "2 TERMINATED" in out, err
    assert f"{STATE}: trial entry 0" in caplog.text or odd in ("a folder that is a path", "a config that is a list")
    code, out, _ = run(root, "best", str(root), "--rule", "last", "--json")
    assert code == 0 and json.loads(out)["trial_id"] == "bbb"
    assert run(root, "plot", str(root), "-o", str(tmp_path / "p.png"))[0] == 0
    code, _, err = run(root, "resume", str(root))
    if odd in ("a folder that is a path", "a config that is a list"):
        assert code == "reached"  # odd for a reader, nothing Tune cannot restore
    else:
        assert code == 2 and f"cannot resume safely: {root / STATE}: trial entry 0" in err
    assert _snapshot(root) == before


# --- a trial folder that is gone, or a file of a trial that is no file ------------------------------------


def test_a_deleted_trial_folder_is_shown_missing_named_and_makes_the_answer_incomplete(tmp_path, caplog):
    root = _sweep(tmp_path / "exp")
    shutil.rmtree(_trial(root, "aaa"))
    before = _snapshot(root)
    code, out, err = run(root, "status", str(root))
    assert code == 1 and "1 MISSING" in out and "incomplete" in err
    assert f"{_trial(root, 'bbb').parent / 'train_aaa_00000_0_x'}: trial aaa is listed in {STATE} (TERMINATED) but its folder is gone" in caplog.text
    code, out, _ = run(root, "status", str(root), "--json")
    assert code == 1 and {r["trial_id"]: r["state"] for r in json.loads(out)} == {"aaa": "MISSING", "bbb": "TERMINATED"}
    code, out, _ = run(root, "best", str(root), "--rule", "last", "--json")
    assert code == 1 and json.loads(out)["trial_id"] == "bbb"
    code, _, err = run(root, "resume", str(root))
    assert code == 2 and "trial aaa is listed" in err
    assert run(root, "confirm", str(root), "--top", "1", "--seeds", "2")[0] == 2
    assert _snapshot(root) == before


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _socket(path: Path) -> None:
    path.unlink()
    # Bound by a path relative to its folder: a socket's path may be at most 107 bytes, and a test's
    # folder under pytest-xdist's workers is longer than that.
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(path.name)
    finally:
        os.chdir(here)


def _device(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")  # reading it never ends


NOT_A_FILE = {"a folder": _folder, "a FIFO": _fifo, "a socket": _socket, "a device": _device}


@pytest.mark.parametrize("kind", sorted(NOT_A_FILE))
def test_a_result_file_that_is_no_file_is_never_opened_and_the_trial_is_unreadable(tmp_path, caplog, kind):
    root = _sweep(tmp_path / "exp")
    result = _trial(root, "aaa") / store.RESULT_FILE
    NOT_A_FILE[kind](result)
    before = _snapshot(root)
    code, out, err = run(root, "status", str(root))
    # Before: TERMINATED without a word (a folder), or every reader blocked for good (a FIFO).
    assert code == 1 and "1 UNREADABLE" in out and "incomplete" in err
    assert f"{result}: is {'a device' if kind == 'a device' else kind}, not a file" in caplog.text
    code, out, _ = run(root, "best", str(root), "--rule", "last", "--json")
    assert code == 1 and json.loads(out)["trial_id"] == "bbb"
    assert run(root, "plot", str(root), "-o", str(tmp_path / "p.png"))[0] == 1
    code, _, err = run(root, "resume", str(root))
    assert code == 2 and f"{result}: is" in err
    assert run(root, "confirm", str(root), "--top", "1", "--seeds", "2")[0] == 2
    assert _snapshot(root) == before


@pytest.mark.parametrize("name", [store.ERROR_FILE, store.PARAMS_FILE, store.TRIAL_FILE])
@pytest.mark.parametrize("kind", ["a folder", "a FIFO"])
def test_another_file_of_a_trial_that_is_no_file_is_named(tmp_path, caplog, name, kind):
    root = _sweep(tmp_path / "exp")
    path = _trial(root, "aaa") / name
    path.write_text("{}")
    NOT_A_FILE[kind](path)
    before = _snapshot(root)
    code, out, err = run(root, "status", str(root))
    assert code == 1 and "aaa" in out and "Traceback" not in out + err and f"{path}: is {kind}, not a file" in caplog.text
    code, out, _ = run(root, "best", str(root), "--rule", "last", "--json")
    assert code == 1 and json.loads(out)["trial_id"] == "bbb"
    assert run(root, "resume", str(root))[0] == 2
    assert _snapshot(root) == before


# --- a garbled confirmation -----------------------------------------------------------------------------

#: (the confirmation's JSON from the intact one, the exit of `best --rule confirmed`): 2 where nothing of it
#: can be used, 1 where its usable part answers.
GARBLED: dict[str, tuple[Callable[[dict], object], int]] = {
    "a list": (lambda c: [c], 2),
    "no configurations": (lambda c: {k: v for k, v in c.items() if k != "configurations"}, 2),
    "configurations is an object": (lambda c: {**c, "configurations": {"bbb": 1}}, 2),
    "a row that is a number": (lambda c: {**c, "configurations": [5, *c["configurations"]]}, 1),
    "a row without its trial id": (lambda c: {**c, "configurations": [{"iqm": 3}, *c["configurations"]]}, 1),
    "a row's numbers are texts": (lambda c: {**c, "configurations": [
        {**c["configurations"][0], "iqm": "9", "ci_low": [], "per_seed": {"1000": "x", "y": 1}}, *c["configurations"][1:]]}, 1),
    "an interval that misses its IQM": (lambda c: {**c, "configurations": [
        {**r, "ci_low": r["iqm"] + 5, "ci_high": r["iqm"] + 9} for r in c["configurations"]]}, 1),
    "nested garbage": (lambda c: {**c, "metric": {"a": [1]}, "winner": [1], "ties": [[1], {}], "test_seeds": "x",
                                  "created": "now", "configurations": [{**r, "p_beats": [1], "missing": 5, "config": []}
                                                                       for r in c["configurations"]]}, 1),
}


@pytest.mark.parametrize("garbled", sorted(GARBLED))
def test_a_garbled_confirmation_is_named_and_what_is_intact_of_it_used(tmp_path, caplog, garbled):
    root = _sweep(tmp_path / "exp")
    path = root / store.CONFIRMATION_FILE
    shape, expected = GARBLED[garbled]
    path.write_text(json.dumps(shape(json.loads(path.read_text()))))
    before = _snapshot(root)
    code, out, err = run(root, "best", str(root), "--rule", "confirmed", "--json")
    assert code == expected and str(path) in caplog.text + err, err
    if expected == 1:
        assert json.loads(out)["rule"] == "confirmed" and "incomplete" in err
    else:
        assert "holds no confirmation rlsweep can read" in err and "rlsweep confirm" in err
    code, _, err = run(root, "plot", str(root), "--kind", "confirmation", "-o", str(tmp_path / "c.png"))
    assert code == expected, err
    assert (tmp_path / "c.png").exists() == (expected == 1)
    assert _snapshot(root) == before


def test_export_of_a_damaged_folder_logs_what_is_intact_and_says_it_is_incomplete(tmp_path, caplog, mlflow_uri):
    from mlflow import MlflowClient

    root = _sweep(tmp_path / "exp")
    shutil.rmtree(_trial(root, "aaa"))
    (root / store.CONFIRMATION_FILE).write_text(json.dumps({"configurations": [7, {"trial_id": "bbb", "iqm": 9.0}]}))
    before = _snapshot(root)
    uri = mlflow_uri
    code, out, err = run(root, "export", str(root), "--tracking-uri", uri, "--experiment", "damaged")
    assert code == 1 and "incomplete" in err and "configurations[0] is 7" in caplog.text
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("damaged").experiment_id])
    trials = {r.data.tags.get("rlsweep.trial_id"): r for r in runs if r.data.tags.get("rlsweep.kind") == "trial"}
    assert list(trials) == ["bbb"] and trials["bbb"].info.status == "FINISHED"  # no empty run for the missing aaa
    assert _snapshot(root) == before


# --- resume and confirm refuse up front --------------------------------------------------------------------

REFUSED: dict[str, tuple[Callable[[Path], object], str]] = {
    "a status Tune does not know": (lambda r: (r / STATE).write_text(json.dumps(
        {"trial_data": [_entry(r, "aaa", "BOGUS"), _entry(r, "bbb")]})), "has status 'BOGUS', not one of Tune's"),
    "a status that is a number": (lambda r: (r / STATE).write_text(json.dumps(
        {"trial_data": [_entry(r, "aaa", 7), _entry(r, "bbb")]})), "has status 7"),
    "a cut-off tuner": (lambda r: (r / store.TUNER_FILE).write_bytes((r / store.TUNER_FILE).read_bytes()[:-3]),
                        "tuner.pkl is cut off or not a pickle"),
    "a tuner that is a folder": (lambda r: _folder(r / store.TUNER_FILE), "tuner.pkl: is a folder, not a file"),
    "a stray trial folder": (lambda r: write_trial(r, "ccc", [1, 2], config={"training.lr": 0.1}),
                             "train_ccc_00000_0_x: a trial folder"),
    "a spec that is a FIFO": (lambda r: _fifo(r / store.SPEC_FILE), "rlsweep_spec.yaml: is a FIFO, not a file"),
    "a state that is a FIFO": (lambda r: _fifo(r / STATE), f"{STATE}: is a FIFO, not a file"),
}


@pytest.mark.parametrize("damage", sorted(REFUSED))
def test_resume_refuses_a_damaged_folder_up_front_naming_what_is_wrong(tmp_path, damage):
    root = _sweep(tmp_path / "exp")
    assert run(root, "resume", str(root))[0] == "reached"  # the intact folder passes the checks
    REFUSED[damage][0](root)
    before = _snapshot(root)
    code, _, err = run(root, "resume", str(root))
    assert code == 2 and "cannot resume safely" in err and REFUSED[damage][1] in err, err
    assert "Nothing was changed" in err and _snapshot(root) == before


def test_resume_refuses_a_folder_it_cannot_write(tmp_path, monkeypatch):
    root = _sweep(tmp_path / "exp")
    real_access = os.access
    # A read-only mount, as the tests run as root (who may write a folder whatever its mode says).
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if mode & os.W_OK and Path(path) == root else real_access(path, mode, **kw))
    before = _snapshot(root)
    code, _, err = run(root, "resume", str(root))
    assert code == 2 and f"{root}: cannot be written (read-only)" in err and _snapshot(root) == before


@pytest.mark.parametrize("where", [store.CONFIRMATION_FILE, store.REPRODUCIBILITY_MD])
def test_confirm_refuses_where_it_could_not_write_its_result(tmp_path, where):
    root = _sweep(tmp_path / "exp")
    assert run(root, "confirm", str(root), "--top", "1", "--seeds", "2")[0] == "reached"
    _folder(root / where)
    before = _snapshot(root)
    code, _, err = run(root, "confirm", str(root), "--top", "1", "--seeds", "2")
    assert code == 2 and f"{root / where}: is a folder, not a file" in err and _snapshot(root) == before


# --- a warm start from a damaged folder ----------------------------------------------------------------


def test_a_warm_start_from_a_damaged_folder_uses_what_is_intact_and_names_what_is_not(tmp_path, caplog):
    from rlsweep.errors import SpecError
    from rlsweep import load_spec
    from rlsweep.warm_start import previous_trials
    from tests.conftest import TINY_SPEC

    root = _sweep(tmp_path / "exp")
    _fifo(_trial(root, "aaa") / store.RESULT_FILE)
    space = load_spec(TINY_SPEC, preflight=False).search_space
    evaluated, skipped = previous_trials(root, space, "return_mean", "max", 4000)
    assert [e.value for e in evaluated] == [70] and any(s.startswith("aaa: unreadable") for s in skipped)
    assert "is a FIFO, not a file" in caplog.text
    _fifo(root / store.SWEEP_FILE)
    with pytest.raises(SpecError, match="searcher.warm_start: cannot read"):
        previous_trials(root, space, "return_mean", "max", 4000)


# --- any file of the folder, damaged at random ----------------------------------------------------------

# The examples' intact folder, built once (hypothesis draws the file to damage from its list).
_TEMPLATE = Path(tempfile.mkdtemp(prefix="rlsweep-damaged-")) / "exp"
atexit.register(shutil.rmtree, _TEMPLATE.parent, True)
_sweep(_TEMPLATE)
FILES = sorted(str(p.relative_to(_TEMPLATE)) for p in _TEMPLATE.rglob("*") if p.is_file())
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
DAMAGE = st.one_of(
    st.sampled_from(["a folder", "a FIFO", "empty", "deleted"]),
    st.binary(min_size=1, max_size=64).map(lambda b: ("garbage", b)),
    JSON.map(lambda v: ("json", json.dumps(v))),
)


def _damage(path: Path, damage: object) -> None:
    if damage in ("a folder", "a FIFO"):
        NOT_A_FILE[damage](path)  # type: ignore[index]
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "deleted":
        path.unlink()
    else:
        kind, content = damage  # type: ignore[misc]
        path.write_bytes(content if kind == "garbage" else content.encode())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(FILES), damage=DAMAGE, reader=st.sampled_from(READERS))
def test_every_reader_survives_any_file_damaged_at_random(tmp_path, mlflow_uri, name, damage, reader):
    # One reader per example (an export takes 2 s, the rest a fraction of one): over the examples, each
    # reader meets each kind of damage.
    example = Path(tempfile.mkdtemp(dir=tmp_path))
    root = example / "exp"
    shutil.copytree(_TEMPLATE, root)
    _damage(root / name, damage)
    before = _snapshot(root)
    unreadable = damage in ("a folder", "a FIFO")
    # What the sweep's trials and Tune's restore read (not the confirmation's files, which resume never reads).
    of_the_sweep = name not in (store.CONFIRMATION_FILE, store.REPRODUCIBILITY_JSON, store.REPRODUCIBILITY_MD)
    try:
        code, out, err = run(root, *_readers(root, example, mlflow_uri, example.name)[reader])
        assert code in (0, 1, 2) or (code == "reached" and reader in ("resume", "confirm")), (reader, code, err)
        assert "Traceback" not in out + err, (reader, err)
        assert _snapshot(root) == before, reader
        if unreadable and reader in ("status", "status --json", "best", "export") and name.startswith("train_"):
            assert code == 1, (reader, err)  # a trial that cannot be read all: an incomplete answer
        # Refused up front, what is wrong named: resume needs every file of the sweep, confirm its trials'
        # files and those it writes its result to.
        if unreadable and reader == "resume" and of_the_sweep:
            assert code == 2, err
        if unreadable and reader == "confirm" and (name.startswith("train_") or not of_the_sweep):
            assert code == 2, err
    finally:
        shutil.rmtree(example)
