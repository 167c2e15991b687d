"""The rows index: a reader of a large sweep parses only the ``result.json`` files that changed since the last
read, and its answers are the ones a full parse gives, whatever happened to the files or to the index."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import rlsweep
from rlsweep import store
from tests.experiments import new_experiment, write_trial


def _sweep(root: Path) -> Path:
    """Three trials: one with a row redone after a restore and a garbled line, one with checkpoints, one that
    reports a config in its rows (the last row's is the trial's)."""
    new_experiment(root)
    redone = write_trial(root, "aaaaa_00000", [1.0, 2.0, 3.0], config={"training.lr": 0.001})
    with (redone / store.RESULT_FILE).open("a") as handle:
        handle.write("{garbled\n")
        handle.write(json.dumps({"trial_id": "aaaaa_00000", "env_steps": 2000, "return_mean": 9.0, "timestamp": 4}) + "\n")
    write_trial(root, "bbbbb_00001", [4.0, 5.0], config={"training.lr": 0.002}, checkpoints=[1000, 2000])
    write_trial(root, "ccccc_00002", [0.5, 7.0, 6.0, 8.0], config={"training.lr": 0.003}, config_in_rows=True, done=True)
    return root


def _answers(root: Path) -> dict[str, object]:
    """What a user reads: each trial's state, config, rows, values and env steps; the table; the best."""
    sweep = rlsweep.load(root)
    best = sweep.best()
    return {
        "trials": {t.trial_id: (t.state, dict(t.config), [dict(r) for r in t.rows], [dict(r) for r in t.raw_rows],
                                t.values("return_mean"), t.env_steps, [c.env_steps for c in t.checkpoints])
                   for t in sweep.trials},
        "table": sweep.table().to_json(),
        "best": (best.trial_id, best.value, best.env_steps, best.checkpoint),
    }


def _no_parsing(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the ``result.json`` files parsed from now on."""
    parsed: list[int] = []
    scan = store._scan_rows

    def counting(data: bytes):
        parsed.append(len(data))
        return scan(data)

    monkeypatch.setattr(store, "_scan_rows", counting)
    return parsed


def test_a_second_read_parses_no_rows_and_answers_as_the_first(tmp_path, monkeypatch, caplog):
    root = _sweep(tmp_path / "exp")
    with caplog.at_level("WARNING"):
        first = _answers(root)
    assert (root / store.ROWS_INDEX).is_file()
    parsed = _no_parsing(monkeypatch)
    caplog.clear()
    with caplog.at_level("WARNING"):
        sweep = rlsweep.load(root)
        table, best = sweep.table(), sweep.best()
    # status, best and table read the index alone: not one trial's rows parsed.
    assert parsed == []
    assert "aaaaa_00000_00000_0_x: skipped 1 unreadable line(s)" in caplog.text.replace("train_", "")
    assert table.to_json() == first["table"] and (best.trial_id, best.value, best.env_steps, best.checkpoint) == first["best"]
    # The restored row replaces the ones it redid, from the index as from the file.
    assert sweep.trials[0].values("return_mean") == [1.0, 9.0]
    assert _answers(root) == first  # rows read in full when asked for: the same rows
    # ... and the tuple they always were: a script that dumps them as JSON or adds them up reads the same.
    again = rlsweep.load(root).trials
    assert json.loads(json.dumps([t.rows for t in again])) == [list(map(dict, t.rows)) for t in sweep.trials]
    assert all(type(t.rows) is tuple and type(t.raw_rows) is tuple for t in again)


def test_rows_appended_since_the_index_was_written_are_read(tmp_path, monkeypatch):
    root = _sweep(tmp_path / "exp")
    rlsweep.load(root).table()
    result = next(root.glob("train_bbbbb*")) / store.RESULT_FILE
    with result.open("a") as handle:
        handle.write(json.dumps({"trial_id": "bbbbb_00001", "env_steps": 3000, "return_mean": 50.0, "timestamp": 3}) + "\n")
    parsed = _no_parsing(monkeypatch)
    sweep = rlsweep.load(root)
    assert len(parsed) == 1  # the changed file only
    trial = next(t for t in sweep.trials if t.trial_id == "bbbbb_00001")
    assert trial.values("return_mean") == [4.0, 5.0, 50.0] and trial.env_steps == 3000
    assert sweep.best().trial_id == "bbbbb_00001"


@pytest.mark.parametrize("damage", ["garbled", "not an index", "wrong lengths", "a folder"])
def test_an_index_that_does_not_read_is_rebuilt_and_the_answers_are_the_files(tmp_path, caplog, damage):
    root = _sweep(tmp_path / "exp")
    first = _answers(root)
    index = root / store.ROWS_INDEX
    if damage == "garbled":
        index.write_bytes(b"\0\0{not json")
    elif damage == "not an index":
        index.write_text("[1, 2, 3]")
    elif damage == "wrong lengths":
        found = json.loads(index.read_text())
        for entry in found["trials"].values():
            entry["cols"]["return_mean"] = entry["cols"]["return_mean"][:1]
        index.write_text(json.dumps(found))
    else:
        index.unlink()
        index.mkdir()
    caplog.clear()
    with caplog.at_level("WARNING"):
        again = _answers(root)
    assert again == first
    assert store.ROWS_INDEX not in caplog.text  # a cache: nothing of the sweep is damaged
    assert rlsweep.load(root).damage == []


def test_on_a_full_disk_the_index_is_not_written_and_the_answers_are_the_same(tmp_path, monkeypatch):
    root = _sweep(tmp_path / "exp")
    first = _answers(root)
    (root / store.ROWS_INDEX).unlink()
    fdopen = os.fdopen

    class Full:
        def __init__(self, fd: int) -> None:
            self.file = fdopen(fd, "w")

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            self.file.close()

        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fdopen", lambda fd, mode="r", *a, **k: Full(fd) if "w" in mode else fdopen(fd, mode, *a, **k))
    assert _answers(root) == first
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(store.CACHE_FILES)) == []


def test_an_index_for_another_metric_is_widened_not_trusted(tmp_path, monkeypatch):
    """An index written for other keys (the spec's metric changed, an older index): the file is parsed again."""
    root = _sweep(tmp_path / "exp")
    rlsweep.load(root).table()
    index = root / store.ROWS_INDEX
    found = json.loads(index.read_text())
    found["keys"].remove("return_mean")
    for entry in found["trials"].values():
        del entry["cols"]["return_mean"]
    index.write_text(json.dumps(found))
    parsed = _no_parsing(monkeypatch)
    assert rlsweep.load(root).best().trial_id == "ccccc_00002"
    assert len(parsed) == 3 and "return_mean" in json.loads(index.read_text())["keys"]


def test_the_settings_a_trial_recorded_come_from_the_index_until_the_file_changes(tmp_path, monkeypatch):
    root = new_experiment(tmp_path / "exp")
    folder = write_trial(root, "aaaaa_00000", [1.0, 2.0], config={"training.lr": 0.001},
                         settings={"settings": {"debugging.seed": 11}, "seeds": [11]})
    assert rlsweep.load(root).trials[0].seed == 11
    read: list[str] = []
    noting = store._json_noting
    monkeypatch.setattr(store, "_json_noting", lambda path, *a: read.append(path.name) or noting(path, *a))
    assert rlsweep.load(root).trials[0].seed == 11 and store.TRIAL_FILE not in read
    settings = folder / store.TRIAL_FILE
    settings.write_text(json.dumps({"settings": {"debugging.seed": 12}, "seeds": [12]}) + "   ")
    assert rlsweep.load(root).trials[0].seeds == [12] and read.count(store.TRIAL_FILE) == 1
    settings.write_text("{cut off")  # damage is read and named every time, never kept
    for _ in range(2):
        trial = rlsweep.load(root).trials[0]
        assert trial.seed is None and any(store.TRIAL_FILE in d for d in trial.damage)


def test_the_checkpoints_metrics_come_from_the_index_until_their_metadata_changes_or_they_go(tmp_path, monkeypatch):
    """A sweep of 10,000 trials has as many checkpoints, each a metadata file to open and parse: a read after
    the first takes their metrics from the rows index while each file is as it was, reads a rewritten one
    again, drops one deleted since, and names damage every time."""
    import shutil

    root = new_experiment(tmp_path / "exp")
    folder = write_trial(root, "aaaaa_00000", [1.0, 2.0, 3.0], config={"training.lr": 0.001}, checkpoints=[1000, 2000, 3000])
    first = [(c.path.name, dict(c.metrics)) for c in rlsweep.load(root).trials[0].checkpoints]
    assert len(first) == 3
    read: list[str] = []
    reading = store.read_checkpoint_meta
    monkeypatch.setattr(store, "read_checkpoint_meta", lambda directory: read.append(Path(directory).name) or reading(directory))
    assert [(c.path.name, dict(c.metrics)) for c in rlsweep.load(root).trials[0].checkpoints] == first and read == []
    newest = folder / first[-1][0]
    meta = json.loads((newest / store.CHECKPOINT_META).read_text())
    meta["metrics"]["return_mean"] = 30.0
    (newest / store.CHECKPOINT_META).write_text(json.dumps(meta) + " ")
    assert rlsweep.load(root).trials[0].checkpoints[-1].metrics["return_mean"] == 30.0 and read == [newest.name]
    assert rlsweep.load(root).trials[0].checkpoints[-1].metrics["return_mean"] == 30.0 and read == [newest.name]  # kept
    shutil.rmtree(folder / first[0][0])
    assert [c.path.name for c in rlsweep.load(root).trials[0].checkpoints] == [n for n, _ in first[1:]]
    shutil.rmtree(newest / store.ALGORITHM_STATE)  # its metrics kept, its learner gone: not a checkpoint to use
    assert [c.path.name for c in rlsweep.load(root).trials[0].checkpoints] == [first[1][0]]
    (folder / first[1][0] / store.CHECKPOINT_META).write_text("\0garbage")
    for _ in range(2):
        trial = rlsweep.load(root).trials[0]
        assert trial.checkpoints == () and any(store.CHECKPOINT_META in d for d in trial.damage)


def test_a_result_file_rewritten_with_its_size_and_mtime_or_made_unreadable_is_read_again(tmp_path):
    """``cp -p`` and ``touch -r`` keep size and mtime; a chmod keeps both and the inode: none is taken from the
    index (their ctime changed)."""
    root = _sweep(tmp_path / "exp")
    rlsweep.load(root).table()
    result = next(root.glob("train_ccccc*")) / store.RESULT_FILE
    before = result.stat()
    result.write_text(result.read_text().replace('"return_mean": 8.0', '"return_mean": 9.0'))
    os.utime(result, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert result.stat().st_size == before.st_size and result.stat().st_mtime_ns == before.st_mtime_ns
    trial = next(t for t in rlsweep.load(root).trials if t.trial_id == "ccccc_00002")
    assert trial.values("return_mean") == [0.5, 7.0, 6.0, 9.0]


def test_an_index_with_keys_of_the_wrong_kind_is_rebuilt_not_a_crash(tmp_path, capsys):
    from rlsweep.cli import main

    root = _sweep(tmp_path / "exp")
    rlsweep.load(root).table()
    index = root / store.ROWS_INDEX
    found = json.loads(index.read_text())
    index.write_text(json.dumps({**found, "keys": [["env_steps"], {"a": 1}]}))
    assert main(["status", str(root)]) == 0
    assert "ccccc_00002" in capsys.readouterr().out


def test_a_reader_never_writes_through_a_link_planted_in_the_folder(tmp_path):
    root = _sweep(tmp_path / "exp")
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    for pid in (os.getpid(), *range(1, 50)):
        (root / f"{store.ROWS_INDEX}.{pid}.tmp").symlink_to(victim)
    rlsweep.load(root).table()
    assert victim.read_text() == "mine" and (root / store.ROWS_INDEX).is_file()
    assert not (root / store.ROWS_INDEX).is_symlink()


def test_rows_read_after_their_file_went_away_say_so(tmp_path):
    root = _sweep(tmp_path / "exp")
    rlsweep.load(root).table()
    sweep = rlsweep.load(root)
    trial = next(t for t in sweep.trials if t.trial_id == "bbbbb_00001")
    (trial.path / store.RESULT_FILE).rename(trial.path / "moved.json")
    assert trial.row_count == 2 and trial.values("return_mean") == [4.0, 5.0]  # known from the index
    with pytest.raises(store.SweepError, match=r"result\.json: is gone since the sweep was loaded; load it again"):
        len(trial.rows)
    (trial.path / "moved.json").rename(trial.path / store.RESULT_FILE)
    size = (trial.path / store.RESULT_FILE).stat().st_size
    # Rewritten shorter with as many rows, or as long with fewer: not the rows the index counted.
    for text in ('{"a": 1}\n{"a": 2}\n', '{"a": "' + "x" * size + '"}\n'):
        (trial.path / store.RESULT_FILE).write_text(text)
        with pytest.raises(store.SweepError, match="was rewritten since the sweep was loaded"):
            list(trial.rows)


# --- what readers take from Tune's experiment state ------------------------------------------------------

STATE = "experiment_state-2026-01-01_00-00-00.json"


def _with_state(root: Path, statuses: dict[str, str], junk: int = 0) -> None:
    """Tune's state for ``root``'s trials, each entry padded with ``junk`` bytes of results a reader skips."""
    entries = []
    for trial_id, status in statuses.items():
        folder = next(root.glob(f"train_{trial_id}_*")).name
        trial = {"trial_id": trial_id, "status": status, "relative_logdir": folder, "config": {"lr": 0.1},
                 "last_result": {"padding": "x" * junk}}
        entries.append([json.dumps(trial), json.dumps({"num_failures": 1 if status == "ERROR" else 0})])
    (root / STATE).write_text(json.dumps({"trial_data": entries}))


def test_tunes_state_is_parsed_once_and_read_again_only_when_tune_rewrites_it(tmp_path, monkeypatch):
    root = _sweep(tmp_path / "exp")
    _with_state(root, {"aaaaa_00000": "RUNNING", "bbbbb_00001": "TERMINATED", "ccccc_00002": "TERMINATED"}, junk=10_000)
    first = _answers(root)
    assert first["trials"]["aaaaa_00000"][0] == store.RUNNING and (root / store.STATE_INDEX).is_file()
    assert (root / store.STATE_INDEX).stat().st_size < (root / STATE).stat().st_size / 10  # what a reader needs, not Tune's results
    parsed: list[Path] = []
    parse = store._parse_state
    monkeypatch.setattr(store, "_parse_state", lambda path: parsed.append(path) or parse(path))
    assert _answers(root) == first and store.trial_states(root) == {
        "aaaaa_00000": ("RUNNING", 0), "bbbbb_00001": ("TERMINATED", 0), "ccccc_00002": ("TERMINATED", 0)}
    assert parsed == []
    # Tune saves its state again: the trial that was running has failed.
    _with_state(root, {"aaaaa_00000": "ERROR", "bbbbb_00001": "TERMINATED", "ccccc_00002": "TERMINATED"}, junk=10_001)
    assert store.trial_states(root)["aaaaa_00000"] == ("ERROR", 1) and parsed == [root / STATE]
    states = {t.trial_id: t.state for t in rlsweep.load(root).trials}
    assert states["aaaaa_00000"] == store.ERROR and parsed == [root / STATE]


@pytest.mark.parametrize("cache", ["not json", '{"version": 1, "entries": 5}', "[]", '{"version": 99}'])
def test_a_damaged_state_index_is_not_trusted_and_is_written_again(tmp_path, cache):
    root = _sweep(tmp_path / "exp")
    _with_state(root, {"aaaaa_00000": "TERMINATED", "bbbbb_00001": "ERROR", "ccccc_00002": "TERMINATED"})
    first = store.trial_states(root)
    (root / store.STATE_INDEX).write_text(cache)
    assert store.trial_states(root) == first == {
        "aaaaa_00000": ("TERMINATED", 0), "bbbbb_00001": ("ERROR", 1), "ccccc_00002": ("TERMINATED", 0)}
    assert json.loads((root / store.STATE_INDEX).read_text())["version"] == 1


def test_a_state_index_of_another_folder_or_a_damaged_state_is_not_used(tmp_path):
    root = _sweep(tmp_path / "exp")
    _with_state(root, {"aaaaa_00000": "DONE", "bbbbb_00001": "TERMINATED", "ccccc_00002": "TERMINATED"})
    assert any(str(root / STATE) in p and "has status 'DONE'" in p for p in store.tune_state(root).problems)
    # The sweep moved: its files keep their sizes and times, and what is odd in them is named where they are now.
    copy = tmp_path / "copy"
    os.rename(root, copy)
    problems = store.tune_state(copy).problems
    assert problems and all(str(copy / STATE) in p for p in problems), problems
    # A state that does not read is named every time it is read, never kept as a good one.
    (copy / STATE).write_text('{"trial_data": [["{\\"trial_id')
    for _ in range(2):
        state = store.tune_state(copy)
        assert state.entries is None and "is not JSON" in state.damage[0]


@pytest.mark.parametrize("collecting", [True, False])
def test_reading_leaves_the_programs_garbage_collector_as_it_was(tmp_path, collecting):
    """A read turns the cyclic collector off while it builds the trials and hands what it read to the oldest
    generation: the collector is on or off afterwards as the program had it, and objects the program froze
    (``gc.freeze()``, as a server that forks does) stay frozen."""
    import gc

    root = _sweep(tmp_path / "exp")
    frozen = [[index] for index in range(3)]
    was = gc.isenabled()
    gc.freeze()
    try:
        gc.enable() if collecting else gc.disable()
        rlsweep.load(root)
        assert gc.isenabled() is collecting
        ids = {id(o) for o in frozen}
        assert not [o for o in gc.get_objects() if id(o) in ids]  # the collector's generations leave out frozen ones
    finally:
        gc.unfreeze()
        gc.enable() if was else gc.disable()
    assert len([o for o in gc.get_objects() if id(o) in ids]) == 3  # (so the check above can see them)


def test_what_a_read_builds_goes_to_the_collectors_oldest_generation_at_once(tmp_path):
    """The trials a read builds live as long as the sweep: they start in the oldest generation, so the young
    collections that follow do not walk every row of every trial again (a fifth of `rlsweep status` on 10,000
    trials)."""
    import gc

    root = _sweep(tmp_path / "exp")
    assert gc.isenabled() and gc.get_freeze_count() == 0
    trials = rlsweep.load(root).trials
    ids = {id(t) for t in trials}
    assert gc.get_freeze_count() == 0
    assert len([o for o in gc.get_objects(generation=2) if id(o) in ids]) == len(trials) == 3
    assert not [o for g in (0, 1) for o in gc.get_objects(generation=g) if id(o) in ids]
