"""Experiment directories with missing, cut-off, edited or foreign files, read by the commands a user runs on
them (``status``, ``best``, ``export``, ``reproduce``, ``evaluate``, ``resume``): each either reads what is
intact or refuses with a clear error and exit 2, never a traceback, and never changes what is on disk (the
export's lock file aside)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from rlsweep import cli, store
from tests.conftest import TINY_SPEC
from tests.experiments import new_experiment, write_trial

STATE = "experiment_state-2026-01-01_00-00-00.json"


def _sweep(root: Path) -> Path:
    """Two finished trials: ``aaa`` ends at 40, ``bbb`` at 70 (the best under max), both with checkpoints."""
    new_experiment(root)
    write_trial(root, "aaa", [10, 20, 30, 40], checkpoints=[2000, 4000], config={"training.lr": 0.01})
    write_trial(root, "bbb", [5, 50, 60, 70], checkpoints=[2000, 4000], config={"training.lr": 0.001})
    return root


def _trial(root: Path, trial_id: str) -> Path:
    return next(root.glob(f"train_{trial_id}_*"))


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


DAMAGE: dict[str, Callable[[Path], None]] = {
    "params.json is a list": lambda r: (_trial(r, "aaa") / store.PARAMS_FILE).write_text("[1, 2]"),
    "checkpoint metadata is a list": lambda r: [
        m.write_text("[1]") for m in _trial(r, "aaa").glob(f"checkpoint_*/{store.CHECKPOINT_META}")
    ],
    "Tune's state is []": lambda r: (r / STATE).write_text("[]"),
    "Tune's state has odd trial data": lambda r: (r / STATE).write_text('{"trial_data": 5}'),
    "Tune's state is cut off": lambda r: (r / STATE).write_text('{"trial_data": [["{\\"trial_id'),
    "a result line is not an object": lambda r: (_trial(r, "aaa") / store.RESULT_FILE).open("a").write("[1, 2]\n"),
    "env_steps is not a number": lambda r: (_trial(r, "aaa") / store.RESULT_FILE).write_text(
        json.dumps({"trial_id": "aaa", "env_steps": "many", "return_mean": 1}) + "\n"
    ),
    "a foreign folder": lambda r: (r / "train_zzz_foreign").mkdir() or (r / "train_zzz_foreign" / "result.json").write_text("hi\n"),
    "error.txt is binary": lambda r: (_trial(r, "aaa") / store.ERROR_FILE).write_bytes(b"\xff\xfe" * 50),
}
#: The damage a reader cannot read past: the file it names in a warning, and the answer is incomplete
#: (exit 1). The rest is read as it is (one odd line among rows, a value of the wrong type, any bytes in an
#: error text), without a word of incompleteness (exit 0).
NAMED = {
    "params.json is a list": f"train_aaa_00000_0_x/{store.PARAMS_FILE}: holds [1, 2], not a JSON object",
    "checkpoint metadata is a list": f"({store.CHECKPOINT_META} is not rlsweep's): the checkpoint cannot be read",
    "Tune's state is []": f"{STATE}: is not a Tune experiment state",
    "Tune's state has odd trial data": f"{STATE}: is not a Tune experiment state",
    "Tune's state is cut off": f"{STATE}: is not JSON",
    "a foreign folder": "train_zzz_foreign/result.json: is damaged (garbled: 1 of its 1 line(s) are not result rows)",
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_status_and_best_read_what_is_intact(tmp_path, capsys, caplog, damage):
    root = _sweep(tmp_path / "exp")
    DAMAGE[damage](root)
    before = _snapshot(root)
    expected = 1 if damage in NAMED else 0
    code, out, err = _run(capsys, "status", str(root))
    assert code == expected, err
    assert "bbb" in out and "Traceback" not in out + err
    assert (NAMED[damage] in caplog.text and "incomplete" in err) if damage in NAMED else "incomplete" not in err, caplog.text
    code, out, err = _run(capsys, "best", str(root), "--rule", "last", "--json")
    assert code == expected, err
    best = json.loads(out)
    # bbb is intact in every case and the best under max; its best checkpoint is its last one.
    assert best["trial_id"] == "bbb" and best["value"] == 70
    assert best["checkpoint"] == str(_trial(root, "bbb") / "checkpoint_000001")
    # The export logs what is intact: bbb with every row.
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code, _, err = _run(capsys, "export", str(root), "--tracking-uri", uri, "--experiment", "damaged")
    assert code == expected, err
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("damaged").experiment_id], "tags.`rlsweep.trial_id` = 'bbb'")
    assert [len(client.get_metric_history(r.info.run_id, "return_mean")) for r in runs] == [4]
    assert _snapshot(root) == {**before, **{k: v for k, v in _snapshot(root).items() if k in (store.MLFLOW_LOCK, *store.CACHE_FILES)}}


def test_a_damaged_checkpoint_is_never_offered_as_the_best(tmp_path, capsys, caplog):
    root = _sweep(tmp_path / "exp")
    # bbb's best checkpoint lost its algorithm state (a copy cut off, a disk cleaned by hand): evaluating it
    # would fail, so the best trial's checkpoint is its intact earlier one.
    shutil.rmtree(_trial(root, "bbb") / "checkpoint_000001" / store.ALGORITHM_STATE)
    code, out, err = _run(capsys, "best", str(root), "--rule", "last", "--json")
    assert code == 0 and json.loads(out)["checkpoint"] == str(_trial(root, "bbb") / "checkpoint_000000")
    assert "checkpoint_000001: skipped" in caplog.text


def test_status_of_a_sweep_with_no_trial_yet(tmp_path, capsys):
    root = new_experiment(tmp_path / "exp")
    code, out, err = _run(capsys, "status", str(root))
    assert code == 0 and "no trial has started yet" in out, err


def test_results_are_read_with_the_spec_the_sweep_ran_not_an_edited_file(tmp_path, capsys, caplog):
    root = _sweep(tmp_path / "exp")
    edited = store.spec_file(root).read_text().replace("mode: max", "mode: min")
    assert edited != store.spec_file(root).read_text()
    store.spec_file(root).write_text(edited)
    code, out, err = _run(capsys, "best", str(root), "--rule", "last", "--json")
    assert code == 0 and json.loads(out)["trial_id"] == "bbb" and json.loads(out)["mode"] == "max"
    assert "was edited" in caplog.text
    store.spec_file(root).unlink()  # gone altogether: the sweep still reads
    assert _run(capsys, "status", str(root))[0] == 0


def test_a_sweep_from_before_the_spec_was_kept_reads_its_spec_file(tmp_path, capsys):
    root = _sweep(tmp_path / "exp")
    (root / store.SWEEP_FILE).write_text(json.dumps({"sweep_id": "abc"}))
    store.spec_file(root).write_text(store.spec_file(root).read_text().replace("mode: max", "mode: min"))
    code, out, _ = _run(capsys, "best", str(root), "--rule", "last", "--json")
    assert code == 0 and json.loads(out)["trial_id"] == "aaa"


@pytest.mark.parametrize(
    "damage",
    [
        lambda r: (r / STATE).write_text('{"trial_data": [["{\\"trial_id'),
        lambda r: (r / STATE).write_text("[]"),
        lambda r: (r / STATE).write_text('{"trial_data": []}'),
        lambda r: (r / store.TUNER_FILE).unlink(),
    ],
    ids=["state cut off", "state is []", "state has no trials", "no tuner.pkl"],
)
def test_resume_refuses_a_damaged_state_and_changes_nothing(tmp_path, capsys, damage):
    root = _sweep(tmp_path / "exp")
    entry = [json.dumps({"trial_id": "aaa", "status": "RUNNING"}), json.dumps({"num_failures": 0})]
    (root / STATE).write_text(json.dumps({"trial_data": [entry]}))
    (root / store.TUNER_FILE).write_bytes(b"pickled tuner")
    damage(root)
    before = _snapshot(root)
    code, _, err = _run(capsys, "resume", str(root))
    assert code == 2 and "cannot resume safely" in err and "Traceback" not in err
    assert _snapshot(root) == before


def test_evaluate_refuses_a_negative_seed_before_loading_anything(tmp_path, capsys):
    root = _sweep(tmp_path / "exp")
    code, _, err = _run(capsys, "evaluate", str(root), "--seeds", "-1")
    assert code == 2 and "--seeds" in err


def test_reproduce_names_the_trials_when_one_is_unknown(tmp_path, capsys):
    root = _sweep(tmp_path / "exp")
    DAMAGE["params.json is a list"](root)
    code, _, err = _run(capsys, "reproduce", str(root), "zzz")
    assert code == 2 and "aaa, bbb" in err


def test_the_spec_kept_for_a_dict_spec_round_trips(tmp_path):
    # The hand-written directories keep their spec as rlsweep does; this guards the fixture itself.
    root = _sweep(tmp_path / "exp")
    assert store.spec_as_run(store.read_sweep_info(root)) == TINY_SPEC


# --- a damaged file is not an empty one: every reader names it and says its answer is incomplete ------------

import atexit  # noqa: E402
import pickle  # noqa: E402
import tempfile  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import rlsweep.api  # noqa: E402
import rlsweep.sweep  # noqa: E402
from tests.test_damaged_folders import Reached, run  # noqa: E402
from tests.test_damaged_folders import _snapshot as _every_entry  # noqa: E402
from tests.test_damaged_folders import _sweep as _confirmed_sweep  # noqa: E402


@pytest.fixture
def no_real_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ``resume``, ``confirm`` and ``reproduce`` would start Ray, a stub says their checks let the folder
    through."""

    def stub(*args: object, **kwargs: object) -> None:
        raise Reached

    monkeypatch.setattr(rlsweep.api, "resume", stub)
    monkeypatch.setattr(rlsweep.api, "run", stub)
    monkeypatch.setattr(rlsweep.sweep, "run_confirmation", stub)


@pytest.fixture(scope="module")
def mlflow_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One MLflow store for this module's new exports (making one takes seconds); each its own experiment."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


def _readers(root: Path, out: Path, trial: str) -> dict[str, tuple[str, ...]]:
    return {
        "status": ("status", str(root)),
        "status --json": ("status", str(root), "--json"),
        "best": ("best", str(root), "--rule", "last", "--json"),
        "plot": ("plot", str(root), "-o", str(out / "curves.png")),
        "resume": ("resume", str(root)),
        "confirm": ("confirm", str(root), "--top", "1", "--seeds", "2"),
        "reproduce": ("reproduce", str(root), trial),
    }


def test_a_results_file_of_nul_bytes_is_unreadable_to_every_reader(tmp_path, caplog, no_real_run, mlflow_store):
    from mlflow import MlflowClient

    root = _confirmed_sweep(tmp_path / "exp")
    result = _trial(root, "aaa") / store.RESULT_FILE
    result.write_bytes(b"\0" * result.stat().st_size)
    before = _every_entry(root)
    named = f"{result}: is damaged (NUL bytes"
    # Before: "skipped 1 unreadable line(s)", aaa TERMINATED with no rows "stopped early by the scheduler", exit 0.
    code, out, err = run(root, "status", str(root))
    assert code == 1 and "1 UNREADABLE, 1 TERMINATED" in out and "stopped early" not in out and "incomplete" in err
    assert named in caplog.text
    code, out, _ = run(root, "status", str(root), "--json")
    assert code == 1 and {r["trial_id"]: (r["state"], r["unreadable"]) for r in json.loads(out)} == {
        "aaa": ("UNREADABLE", store.RESULT_FILE), "bbb": ("TERMINATED", None)}
    code, out, _ = run(root, "best", str(root), "--rule", "last", "--json")
    assert code == 1 and json.loads(out)["trial_id"] == "bbb"
    assert run(root, "plot", str(root), "-o", str(tmp_path / "p.png"))[0] == 1
    code, _, err = run(root, "resume", str(root))
    assert code == 2 and named in err
    code, _, err = run(root, "confirm", str(root), "--top", "1", "--seeds", "2")
    assert code == 2 and named in err
    uri = mlflow_store
    code, _, err = run(root, "export", str(root), "--tracking-uri", uri, "--experiment", "nul")
    assert code == 1 and "incomplete" in err
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("nul").experiment_id], "tags.`rlsweep.kind` = 'trial'")
    # No run that says aaa finished with no metrics: it is left for an export once the file is repaired.
    assert [r.data.tags["rlsweep.trial_id"] for r in runs] == ["bbb"]
    assert _every_entry(root) == before


def test_a_cut_off_settings_file_in_every_trial_is_named_by_every_reader(tmp_path, caplog, no_real_run, mlflow_store):
    from mlflow import MlflowClient

    root = _confirmed_sweep(tmp_path / "exp")
    for trial_id in ("aaa", "bbb"):
        settings_file = _trial(root, trial_id) / store.TRIAL_FILE
        settings_file.write_bytes(settings_file.read_bytes()[:25])
    before = _every_entry(root)
    named = f"{_trial(root, 'aaa') / store.TRIAL_FILE}: is not JSON (JSONDecodeError): cut off, the settings and seed"
    # Before: seeds None without a word, exit 0.
    code, out, err = run(root, "status", str(root), "--json")
    assert code == 1 and named in caplog.text and "incomplete" in err
    assert {(r["seed"], r["unreadable"]) for r in json.loads(out)} == {(None, store.TRIAL_FILE)}
    # Before: "recorded no settings (it never started)".
    code, _, err = run(root, "reproduce", str(root), "aaa")
    assert code == 2 and f"cannot rerun trial aaa: {named}" in err and "never started" not in err
    code, _, err = run(root, "confirm", str(root), "--top", "1", "--seeds", "2")
    assert code == 2 and named in err
    assert run(root, "resume", str(root))[0] == 2
    # Before: the trials logged without their settings, silently, exit 0.
    uri = mlflow_store
    caplog.clear()
    code, _, err = run(root, "export", str(root), "--tracking-uri", uri, "--experiment", "cut")
    assert code == 1 and named in caplog.text and "incomplete" in err
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("cut").experiment_id], "tags.`rlsweep.kind` = 'trial'")
    assert sorted(r.data.tags["rlsweep.trial_id"] for r in runs) == ["aaa", "bbb"]
    assert _every_entry(root) == before


# The examples' intact folder, built once; hypothesis draws the file to damage and how.
_TEMPLATE = Path(tempfile.mkdtemp(prefix="rlsweep-damaged-")) / "exp"
atexit.register(shutil.rmtree, _TEMPLATE.parent, True)
_confirmed_sweep(_TEMPLATE)
#: Every file the readers read to answer about the sweep's trials (not the spec's YAML, which the spec kept
#: in rlsweep.json stands in for; not the confirmation's files, which only some readers read).
READ = sorted(str(p.relative_to(_TEMPLATE)) for p in _TEMPLATE.rglob("*") if p.is_file() and (
    p.parent != _TEMPLATE or p.name in (store.SWEEP_FILE, STATE)))


def _normal(name: str, damage: object) -> bool:
    """Whether ``damage`` to file ``name`` is what a sweep killed mid-write leaves: a results file's last line
    cut short, or a checkpoint's metadata cut short as it was saved."""
    return damage != "NUL bytes" and damage != "a folder" and (
        name.endswith(store.RESULT_FILE) or name.endswith(store.CHECKPOINT_META))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(READ), damage=st.one_of(st.sampled_from(["NUL bytes", "a folder"]), st.floats(0, 1, exclude_max=True)),
       reader=st.sampled_from(["status", "status --json", "best", "plot", "resume", "confirm", "reproduce"]))
def test_any_file_a_reader_reads_damaged_is_named_and_never_read_as_empty(tmp_path, caplog, no_real_run, name, damage, reader):
    example = Path(tempfile.mkdtemp(dir=tmp_path))
    root = example / "exp"
    shutil.copytree(_TEMPLATE, root)
    path = root / name
    size = path.stat().st_size
    if damage == "NUL bytes":
        path.write_bytes(b"\0" * size)
    elif damage == "a folder":
        path.unlink()
        path.mkdir()
    else:
        path.write_bytes(path.read_bytes()[: int(damage * size)])  # cut at any byte
    before = _every_entry(root)
    trial = next((t for t in ("aaa", "bbb") if name.startswith(f"train_{t}_")), "aaa")
    caplog.clear()
    code, out, err = run(root, *_readers(root, example, trial)[reader])
    said = caplog.text + err
    assert _every_entry(root) == before
    if _normal(name, damage):
        if reader.startswith("status"):
            assert code == 0, (name, damage, said)  # the answer is whole: what it read is all there was
        return
    if reader == "reproduce" and not (name.endswith(store.TRIAL_FILE) or name == store.SWEEP_FILE):
        # It reruns a trial from the settings it recorded: damage elsewhere is named, and changes no rerun.
        assert str(path) in said, (name, damage, said)
        return
    # Never exit 0 with a made-up state: the file named, the answer incomplete or refused.
    assert code in (1, 2), (name, damage, reader, code, said)
    assert str(path) in said or (name == store.SWEEP_FILE and store.SWEEP_FILE in said), (name, damage, said)
    if reader in ("resume", "confirm") or name == store.SWEEP_FILE:
        assert code == 2, (name, damage, reader, said)  # refused up front, nothing started
    if reader == "status --json" and name.endswith(store.RESULT_FILE):
        assert {r["trial_id"]: r["state"] for r in json.loads(out)}[trial] == store.UNREADABLE
    shutil.rmtree(example)


# --- a damaged rlsweep.json is said to be damaged, not the spec file edited ---------------------------------


def _checked_sweep(root: Path) -> Path:
    """Two finished trials under sweep info as rlsweep writes it (with its checksum)."""
    import yaml

    store.create_experiment(root, spec_yaml=yaml.safe_dump(TINY_SPEC), document=TINY_SPEC)
    write_trial(root, "aaa", [10, 20, 30, 40], checkpoints=[2000, 4000], config={"training.lr": 0.01})
    write_trial(root, "bbb", [5, 50, 60, 70], checkpoints=[2000, 4000], config={"training.lr": 0.001})
    entries = [[json.dumps({"trial_id": t, "status": "TERMINATED", "relative_logdir": _trial(root, t).name}), "{}"] for t in ("aaa", "bbb")]
    (root / STATE).write_text(json.dumps({"trial_data": entries}))
    (root / store.TUNER_FILE).write_bytes(pickle.dumps({"tuner": "state"}))
    return root


def test_a_damaged_sweep_info_is_named_and_the_sweep_read_with_its_spec_file(tmp_path, capsys, caplog):
    root = _checked_sweep(tmp_path / "exp")
    info = root / store.SWEEP_FILE
    info.write_text(info.read_text().replace('"max"', '"min"'))  # a byte of the kept spec, not the YAML
    code, out, err = _run(capsys, "best", str(root), "--rule", "last", "--json")
    # Before: "rlsweep_spec.yaml was edited", and the best under the damaged mode (min: aaa), exit 0.
    assert code == 1 and json.loads(out)["trial_id"] == "bbb" and "incomplete" in err
    assert f"{info}: is damaged (its content does not match its sha256 checksum)" in caplog.text and "was edited" not in caplog.text
    code, _, err = _run(capsys, "resume", str(root))
    assert code == 2 and f"{info}: is damaged" in err and "differs from the spec" not in err


def test_an_edited_or_unreadable_spec_file_is_said_to_be_so_and_the_kept_spec_read(tmp_path, capsys, caplog):
    root = _checked_sweep(tmp_path / "exp")
    spec_file = store.spec_file(root)
    spec_file.write_text(spec_file.read_text().replace("mode: max", "mode: min"))
    code, out, _ = _run(capsys, "best", str(root), "--rule", "last", "--json")
    assert code == 0 and json.loads(out)["trial_id"] == "bbb" and f"{spec_file} was edited since the sweep ran" in caplog.text
    spec_file.write_bytes(b"\0" * 100)
    caplog.clear()
    code, out, _ = _run(capsys, "best", str(root), "--rule", "last", "--json")
    assert code == 0 and json.loads(out)["trial_id"] == "bbb"
    assert f"{spec_file} cannot be read" in caplog.text and "was edited" not in caplog.text


_INFO = Path(tempfile.mkdtemp(prefix="rlsweep-info-")) / "exp"
atexit.register(shutil.rmtree, _INFO.parent, True)
_checked_sweep(_INFO)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.floats(0, 1, exclude_max=True), byte=st.integers(32, 126))
def test_any_byte_of_the_sweep_info_changed_is_damage_never_an_edit(tmp_path, caplog, where, byte):
    example = Path(tempfile.mkdtemp(dir=tmp_path))
    root = example / "exp"
    shutil.copytree(_INFO, root)
    info = root / store.SWEEP_FILE
    data = bytearray(info.read_bytes())
    at = int(where * len(data))
    data[at] = byte
    info.write_bytes(bytes(data))
    original = json.loads((_INFO / store.SWEEP_FILE).read_text())
    try:
        changed = json.loads(bytes(data))
    except ValueError:
        changed = None
    caplog.clear()
    code, out, err = run(root, "status", str(root))
    said = caplog.text + err
    assert "was edited" not in said, said  # the spec file was never touched
    # Where what it holds changed (not only its checksum's key, which leaves it an unchecked older one):
    # refused (exit 2) or read as damaged (exit 1), rlsweep.json named either way.
    if changed is None or any(changed.get(k) != v for k, v in original.items() if k != store.CHECKSUM_KEY):
        assert code in (1, 2) and store.SWEEP_FILE in said, (bytes(data), code, said)
    shutil.rmtree(example)


# --- a folder that is not in Tune's experiment state ---------------------------------------------------------


def test_a_stray_folder_in_a_copy_is_named_unlisted_and_never_the_best(tmp_path, caplog, no_real_run):
    # Not an incomplete answer (exit 0): nothing of the sweep Tune ran is left unread, and a running sweep has
    # such folders for seconds after each trial starts (Tune saves its state at most every 10 s).
    original = _confirmed_sweep(tmp_path / "exp")
    copy = tmp_path / "copy"
    shutil.copytree(original, copy, symlinks=True)
    stray = copy / "PPO_deadbeef_00099_x"
    stray.mkdir()
    (stray / store.PARAMS_FILE).write_text(json.dumps({"training.lr": 0.5}))
    # A second stray folder with results that beat every trial of the sweep.
    ahead = write_trial(copy, "ccc", [100, 200, 300, 400], config={"training.lr": 0.3})
    before = _every_entry(copy)
    # Before: "deadbeef_00099 PENDING" without a word, and ccc the best trial.
    code, out, err = run(copy, "status", str(copy))
    assert code == 0 and "4 trials 2 UNLISTED, 2 TERMINATED" in out and "PENDING" not in out and "incomplete" not in err
    for folder in (stray, ahead):
        assert f"{folder}: a trial folder not in Tune's experiment state ({STATE})" in caplog.text
    code, out, _ = run(copy, "status", str(copy), "--json")
    assert code == 0 and {r["trial_id"]: r["state"] for r in json.loads(out)} == {
        "deadbeef_00099": "UNLISTED", "ccc": "UNLISTED", "aaa": "TERMINATED", "bbb": "TERMINATED"}
    code, out, _ = run(copy, "best", str(copy), "--rule", "max", "--json")
    assert code == 0 and json.loads(out)["trial_id"] == "bbb"
    code, _, err = run(copy, "resume", str(copy))
    assert code == 2 and f"{stray}: a trial folder {STATE} does not list (Tune would never continue it): move it out" in err
    assert _every_entry(copy) == before


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trial_id=st.from_regex(r"[0-9a-f]{8}_[0-9]{5}", fullmatch=True), prefix=st.sampled_from(["PPO", "train", "SAC_Pendulum-v1"]),
       rows=st.integers(0, 6), with_params=st.booleans())
def test_any_stray_trial_folder_is_unlisted_named_and_never_ranked(tmp_path, caplog, trial_id, prefix, rows, with_params):
    example = Path(tempfile.mkdtemp(dir=tmp_path))
    root = example / "exp"
    shutil.copytree(_TEMPLATE, root)
    stray = root / f"{prefix}_{trial_id}_7_lr=0.5"
    stray.mkdir()
    if with_params or not rows:
        (stray / store.PARAMS_FILE).write_text(json.dumps({"training.lr": 0.5}))
    if rows:
        (stray / store.RESULT_FILE).write_text("".join(
            json.dumps({"trial_id": trial_id, "env_steps": 1000 * i, "return_mean": 1000.0 * i}) + "\n" for i in range(1, rows + 1)))
    caplog.clear()
    code, out, err = run(root, "status", str(root), "--json")
    states = {r["trial_id"]: r["state"] for r in json.loads(out)}
    assert code == 0 and states == {trial_id: "UNLISTED", "aaa": "TERMINATED", "bbb": "TERMINATED"}, (states, err)
    assert f"{stray}: a trial folder not in Tune's experiment state" in caplog.text
    code, out, _ = run(root, "best", str(root), "--rule", "max", "--json")
    assert code == 0 and json.loads(out)["trial_id"] == "bbb"
    shutil.rmtree(example)
