"""The store at its edges, pinned where mutation testing found them unchecked: how a failure's line is shortened for the
terminal, how the live logger reads the rows Tune appended since its last look, what stops a resume or a
confirmation from writing, and what the confirmation's records keep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlsweep import store


#: Where Tune keeps a sweep's experiment state (one file per run of the sweep, named by its start).
STATE = "experiment_state-2026-01-01_00-00-00.json"


def _write_state(root: Path, trial_data) -> Path:
    """Tune's experiment state at ``root`` holding ``trial_data`` as its entries; returns the file."""
    state = root / STATE
    state.write_text(json.dumps({"trial_data": trial_data}))
    return state


def test_a_failure_line_longer_than_300_characters_is_cut_to_300_with_an_ellipsis(tmp_path):
    error = tmp_path / store.ERROR_FILE
    last = "".join(str(i % 10) for i in range(400))
    error.write_text(f"Failure # 1\nTraceback ...\n  something\nValueError: {'x' * 350}\n{last}\n")
    line = store.last_error_line(error)
    assert line == last[:297] + "..." and len(line) == 300
    exact = "y" * 300  # exactly the limit: shown whole
    error.write_text(f"Failure # 1\n{'z' * 400}\n{exact}\n")
    assert store.last_error_line(error) == exact


def test_only_the_last_64_kib_of_an_error_file_are_read(tmp_path):
    """A last line longer than the 64 KiB read from the file's end shows from where that window starts."""
    error = tmp_path / store.ERROR_FILE
    huge = "".join(str(i % 7) for i in range(70 * 1024))
    error.write_text(f"Failure # 1\n{huge}")
    assert store.last_error_line(error) == huge[-64 * 1024 :][:297] + "..."


def test_the_live_logger_reads_complete_rows_from_its_offset_and_waits_for_a_cut_line(tmp_path):
    result = tmp_path / "result.json"
    first = json.dumps({"env_steps": 100, "episode_return_mean": 1.5}) + "\n"
    result.write_text(first + "not json\n" + "[1, 2]\n" + json.dumps({"env_steps": 200, "time_total_s": float("nan")}) + "\n" + '{"env_ste')
    rows, offset = store.read_new_rows(result, 0)
    # Garbled lines and a non-object are no rows; a non-finite Tune number is dropped; the cut line waits.
    assert rows == [{"env_steps": 100, "episode_return_mean": 1.5}, {"env_steps": 200}]
    assert offset == result.stat().st_size - len('{"env_ste')
    assert store.read_new_rows(result, offset) == ([], offset)  # nothing complete since
    with result.open("a") as handle:
        handle.write('ps": 300}\n')
    assert store.read_new_rows(result, offset) == ([{"env_steps": 300}], result.stat().st_size)
    rows, later = store.read_new_rows(result, len(first))  # from the second line on
    assert rows == [{"env_steps": 200}, {"env_steps": 300}] and later == result.stat().st_size


def test_the_live_logger_reads_nothing_from_a_missing_file_or_a_folder(tmp_path):
    assert store.read_new_rows(tmp_path / "gone.json", 17) == ([], 17)
    (tmp_path / "result.json").mkdir()
    assert store.read_new_rows(tmp_path / "result.json", 5) == ([], 5)


def test_reading_trials_warns_of_skipped_lines_only_where_lines_were_skipped(tmp_path, caplog):
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "exp")
    garbled = write_trial(root, "aaaaa_00000", [1.0, 2.0], config={"training.lr": 0.001})
    with (garbled / store.RESULT_FILE).open("a") as handle:
        handle.write("{cut off\n")
    unreadable = write_trial(root, "bbbbb_00001", [1.0], config={"training.lr": 0.002})
    (unreadable / store.RESULT_FILE).unlink()
    (unreadable / store.RESULT_FILE).mkdir()  # a folder where the results belong: damage, no skipped lines
    with caplog.at_level("WARNING"):
        trials = store.read_trials(root, budget_env_steps=4000)
    messages = [r.getMessage() for r in caplog.records]
    assert f"{garbled.name}: skipped 1 unreadable line(s) of {store.RESULT_FILE}" in messages
    assert not any("skipped" in m and unreadable.name in m for m in messages)
    assert {t.trial_id: t.state for t in trials}["bbbbb_00001"] == store.UNREADABLE


def test_a_trial_without_params_takes_its_config_from_tunes_state(tmp_path):
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "exp")
    folder = write_trial(root, "aaaaa_00000", [1.0, 2.0], config={"training.lr": 0.001})
    (folder / store.PARAMS_FILE).unlink()  # lost: Tune's state still records the draw
    trial_json = {"trial_id": "aaaaa_00000", "status": "RUNNING", store.TRIAL_DIR_KEY: folder.name, store.CONFIG_KEY: {"training.lr": 0.005}}
    state = {"trial_data": [[json.dumps(trial_json), json.dumps({"num_failures": 0})]]}
    (root / "experiment_state-2026-01-01_00-00-00.json").write_text(json.dumps(state))
    (trial,) = store.read_trials(root, budget_env_steps=4000)
    assert trial.config == {"training.lr": 0.005}


def test_a_trial_whose_rows_name_no_string_id_is_named_by_its_folder(tmp_path):
    from tests.experiments import new_experiment

    root = new_experiment(tmp_path / "exp")
    folder = root / "train_abcde_00007_7_lr=0.1"
    folder.mkdir()
    (folder / store.RESULT_FILE).write_text(json.dumps({"trial_id": 123, "env_steps": 10}) + "\n")
    (trial,) = store.read_trials(root, budget_env_steps=4000)
    assert trial.trial_id == "abcde_00007"


def test_recorded_settings_that_are_no_mapping_read_as_none(tmp_path):
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "exp")
    folder = write_trial(root, "aaaaa_00000", [1.0], config={"training.lr": 0.001})
    (folder / store.TRIAL_FILE).write_text("[1, 2]")
    (trial,) = store.read_trials(root, budget_env_steps=4000)
    assert trial.settings is None and trial.seeds == []


def test_no_results_file_is_no_rows_and_no_bad_line(tmp_path):
    assert store.read_rows(tmp_path / store.RESULT_FILE) == ([], 0)


def test_a_new_experiment_never_takes_over_an_existing_folder_and_records_where_it_started(tmp_path, monkeypatch):
    from pathlib import Path

    import pytest

    monkeypatch.chdir(tmp_path)
    sweep_id = store.create_experiment(Path("runs/a"), spec_yaml="name: a\n", document={"name": "a"}, restores_other_trials=True)
    info = json.loads((tmp_path / "runs" / "a" / store.SWEEP_FILE).read_text())
    # The path it started at, absolute (a copy of the folder elsewhere is told apart by it).
    assert info["path"] == str(tmp_path / "runs" / "a") and info["sweep_id"] == sweep_id
    assert info["spec"] == {"name": "a"} and info["restores_other_trials"] is True
    with pytest.raises(FileExistsError):
        store.create_experiment(tmp_path / "runs" / "a", spec_yaml="name: b\n", document={"name": "b"})
    assert json.loads((tmp_path / "runs" / "a" / store.SWEEP_FILE).read_text()) == info  # nothing overwritten
    again = store.create_experiment(tmp_path / "runs" / "a", spec_yaml="name: a\n", document={"name": "a"}, exist_ok=True)
    assert again != sweep_id


def test_the_confirmation_plan_reads_back_as_written_and_anything_else_as_none(tmp_path):
    assert store.read_confirmation_plan(tmp_path) is None
    store.write_confirmation_plan(tmp_path, {"candidates": ["a"], "episodes": 3})
    assert store.read_confirmation_plan(tmp_path) == {"candidates": ["a"], "episodes": 3}
    (store.confirmation_dir(tmp_path) / store.CONFIRMATION_PLAN).write_text("[1, 2]")
    assert store.read_confirmation_plan(tmp_path) is None
    (store.confirmation_dir(tmp_path) / store.CONFIRMATION_PLAN).write_text("{cut")
    assert store.read_confirmation_plan(tmp_path) is None


def _resumable(tmp_path):
    """A sweep Tune could resume: its tuner, a state listing a running and a finished trial, their folders."""
    import pickle

    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "exp")
    running = write_trial(root, "aaaaa_00000", [1.0, 2.0], config={"training.lr": 0.001})
    finished = write_trial(root, "bbbbb_00001", [1.0, 2.0, 3.0, 4.0], config={"training.lr": 0.002})
    (root / store.TUNER_FILE).write_bytes(pickle.dumps({"tuner": 1}))

    def entry(trial_id, status, folder):
        trial = {"trial_id": trial_id, "status": status, store.TRIAL_DIR_KEY: folder.name, store.CONFIG_KEY: {}}
        return [json.dumps(trial), json.dumps({"num_failures": 0})]

    state = _write_state(root, [entry("aaaaa_00000", "RUNNING", running), entry("bbbbb_00001", "TERMINATED", finished)])
    return root, running, finished, state


def test_resume_names_a_trial_folder_tunes_state_does_not_list_and_only_unfinished_folders_it_cannot_write(tmp_path, monkeypatch):
    from tests.experiments import write_trial

    root, running, finished, state = _resumable(tmp_path)
    assert store.resume_problems(root) == []
    stray = write_trial(root, "ccccc_00002", [1.0], config={"training.lr": 0.003})
    assert store.resume_problems(root) == [
        f"{stray}: a trial folder {state.name} does not list (Tune would never continue it): move it out of the directory"]
    stray.rename(tmp_path / "elsewhere")
    # Read-only folders (root here ignores permissions, so os.access says it): a resume writes into the
    # unfinished trial's folder, never into the finished one's.
    monkeypatch.setattr(store.os, "access", lambda path, mode: Path(path) not in (running, finished))
    assert store.resume_problems(root) == [f"{running}: cannot be written (read-only); a resume writes there"]


def test_resume_names_a_state_without_entries_a_cut_tuner_and_a_sweep_file_that_is_not_json(tmp_path):
    root, _, _, _ = _resumable(tmp_path)
    state = _write_state(root, [])
    assert store.resume_problems(root) == [f"{state.name} is not a Tune experiment state (no readable trial entries)"]

    root, _, _, _ = _resumable(tmp_path / "second")
    tuner = (root / store.TUNER_FILE).read_bytes()
    (root / store.TUNER_FILE).write_bytes(tuner[:-3])
    (root / store.SWEEP_FILE).write_text("{not json")
    assert store.resume_problems(root) == [
        "tuner.pkl is cut off or not a pickle (ValueError)",
        f"{root}: not an rlsweep experiment directory ({store.SWEEP_FILE}: is not JSON (JSONDecodeError))",
    ]


def test_a_block_device_and_a_character_device_are_named_devices(tmp_path):
    block = next((p for p in Path("/dev").glob("loop*") if p.is_block_device()), None)
    assert store.file_problem(Path("/dev/null")) == "/dev/null: is a device, not a file"
    if block is not None:  # a machine without one (a container without loop devices) checks the character one
        assert store.file_problem(block) == f"{block}: is a device, not a file"


def test_confirm_names_a_file_where_its_folder_goes_and_a_folder_where_its_plan_goes(tmp_path):
    root = tmp_path / "exp"
    root.mkdir()
    assert store.confirmation_problems(root) == []
    store.confirmation_dir(root).write_text("not a folder")
    assert store.confirmation_problems(root) == [f"{store.confirmation_dir(root)}: is not a folder"]
    store.confirmation_dir(root).unlink()
    (store.confirmation_dir(root) / store.CONFIRMATION_PLAN).mkdir(parents=True)
    assert store.confirmation_problems(root) == [f"{store.confirmation_dir(root) / store.CONFIRMATION_PLAN}: is a folder, not a file"]


def test_confirmations_records_keep_values_json_cannot_hold_as_text_and_the_plan_can_be_rewritten(tmp_path):
    root = tmp_path / "exp"
    root.mkdir()
    where = tmp_path / "a path"
    store.write_confirmation(root, {"where": where, "iqm": 1.5})
    assert store.read_confirmation(root) == {"where": str(where), "iqm": 1.5}
    store.write_reproducibility(root, {"where": where}, "# page\n")
    assert json.loads((root / store.REPRODUCIBILITY_JSON).read_text()) == {"where": str(where)}
    store.write_confirmation_plan(root, {"where": where})
    store.write_confirmation_plan(root, {"where": where, "again": True})  # a rerun of confirm writes it again
    assert store.read_confirmation_plan(root) == {"where": str(where), "again": True}


def test_the_reproducibility_record_leaves_out_a_folder_in_its_place_with_a_warning(tmp_path, caplog):
    root = tmp_path / "exp"
    root.mkdir()
    store.write_reproducibility(root, {"seed": 1}, "# page\n")
    assert store.reproducibility_files(root) == [root / store.REPRODUCIBILITY_JSON, root / store.REPRODUCIBILITY_MD]
    (root / store.REPRODUCIBILITY_JSON).unlink()
    (root / store.REPRODUCIBILITY_JSON).mkdir()
    with caplog.at_level("WARNING"):
        assert store.reproducibility_files(root) == [root / store.REPRODUCIBILITY_MD]
    assert [r.getMessage() for r in caplog.records] == [f"{root / store.REPRODUCIBILITY_JSON}: is a folder, not a file; left out"]


def _entry(**fields):
    return json.dumps({"trial_id": "a1", "status": "RUNNING", **fields})


@pytest.mark.parametrize(
    ("entry", "problem", "read"),
    [
        ({}, "is {}, not a trial entry", None),
        (["{cut", "{}"], "is cut off or garbled (not JSON)", None),
        (["[1, 2]", "{}"], "holds [1, 2], not a trial", None),
        ([json.dumps({"trial_id": 7}), "{}"], "has trial id 7, not a name", None),
        ([_entry(), "{}"], None, {"status": "RUNNING", "failures": 0}),
        ([_entry(), json.dumps({"num_failures": 2})], None, {"failures": 2}),
        ([_entry(), "[1]"], "(trial a1) has run data [1], not Tune's; read as 0 failures", {"failures": 0}),
        ([_entry(), json.dumps({"num_failures": -1})], "(trial a1) has failures -1, not Tune's; read as 0 failures", {"failures": 0}),
        ([_entry(status="WAITING"), "{}"],
         "(trial a1) has status 'WAITING', not one of Tune's TERMINATED, ERROR, RUNNING, PENDING, PAUSED", {"status": None}),
        ([_entry(), "{}", "{}"], "(trial a1) is not as Tune writes an entry (two JSON texts)", {"status": "RUNNING"}),
        ([_entry()], "(trial a1) is not as Tune writes an entry (two JSON texts)", {"failures": 0}),
    ],
)
def test_each_odd_entry_of_tunes_state_is_named_and_what_reads_is_kept(tmp_path, entry, problem, read):
    state = _write_state(tmp_path, [entry])
    found = store.tune_state(tmp_path)
    assert list(found.problems) == ([] if problem is None else [f"{state}: trial entry 0 {problem}"])
    if read is None:
        assert found.entries == {}
    else:
        assert {k: getattr(found.entries["a1"], k) for k in read} == read


@pytest.mark.parametrize(("folder", "kept"), [("train_a1_x", True), ("..", False), ("a/b", False), ("", False), (3, False)])
def test_an_entrys_trial_folder_is_kept_only_where_it_is_a_name_inside_the_experiment(tmp_path, folder, kept):
    _write_state(tmp_path, [[_entry(**{store.TRIAL_DIR_KEY: folder, store.CONFIG_KEY: [1]}), "{}"]])
    entry = store.tune_state(tmp_path).entries["a1"]
    assert entry.folder == (folder if kept else None)
    assert entry.config is None  # a config that is no mapping is not taken


@pytest.mark.parametrize(("odd", "more"), [(10, None), (12, "... and 2 more problem(s) like these")])
def test_reading_trials_warns_of_ten_problems_at_most_and_counts_the_rest(tmp_path, caplog, odd, more):
    from tests.experiments import new_experiment

    root = new_experiment(tmp_path / "exp")
    state = _write_state(root, [{}] * odd)
    with caplog.at_level("WARNING"):
        store.read_trials(root, budget_env_steps=4000)
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [f"{state}: trial entry {i} is {{}}, not a trial entry" for i in range(10)] + ([more] if more else [])


def test_the_spec_that_cannot_be_read_is_named_with_why(tmp_path):
    from rlsweep.errors import SweepError

    root = tmp_path / "exp"
    (root / store.SPEC_FILE).mkdir(parents=True)
    with pytest.raises(SweepError) as folder:
        store.read_spec_yaml(root)
    assert str(folder.value) == f"{root}: cannot read the sweep's spec (is a folder, not a file)"
    (root / store.SPEC_FILE).rmdir()
    (root / store.SPEC_FILE).write_bytes(b"name: \xff\n")
    with pytest.raises(SweepError) as binary:
        store.read_spec_yaml(root)
    assert str(binary.value) == f"{root}: cannot read the sweep's spec ({store.SPEC_FILE} is not UTF-8 text)"


def test_a_row_loses_only_its_non_finite_tune_numbers(tmp_path):
    result = tmp_path / "result.json"
    result.write_text('{"env_steps": 100, "timestamp": NaN, "time_total_s": 5.0, "note": "text", "return_mean": 1.5}\n')
    rows, _ = store.read_new_rows(result, 0)
    assert rows == [{"env_steps": 100, "time_total_s": 5.0, "note": "text", "return_mean": 1.5}]


def test_each_damaged_checkpoint_is_named_or_skipped_and_the_later_ones_still_read(tmp_path, caplog):
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "exp")
    folder = write_trial(root, "aaaaa_00000", [1.0, 2.0, 3.0, 4.0], config={"training.lr": 0.001}, checkpoints=[1000, 2000, 3000])
    unreadable, cut, whole = (folder / f"checkpoint_{i:06d}" for i in range(3))
    (unreadable / store.CHECKPOINT_META).unlink()
    (unreadable / store.CHECKPOINT_META).mkdir()  # its metadata cannot be read: damage, named
    (cut / store.ALGORITHM_STATE).rmdir()  # no algorithm state: skipped with a warning
    with caplog.at_level("WARNING"):
        (trial,) = store.read_trials(root, budget_env_steps=4000)
    assert [c.path for c in trial.checkpoints] == [whole] and trial.checkpoints[0].metrics["env_steps"] == 3000
    assert trial.damage == (f"{unreadable / store.CHECKPOINT_META}: is a folder, not a file",)
    assert f"{cut}: skipped, it has no {store.ALGORITHM_STATE}/ (damaged or cut off)" in [r.getMessage() for r in caplog.records]


def test_a_state_entry_without_its_folder_claims_the_folder_named_by_its_trial_id(tmp_path):
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "exp")
    # Tune names folders <trainable>_<trial id>_<index>_<params>; the id may also end the name. Ids that are
    # not Tune's hex (so the reader's fallback, the hex id in a folder's name, cannot find them either).
    at_end = write_trial(root, "qqqqq_00000", [1.0, 2.0], config={"training.lr": 0.001}).rename(root / "train_qqqqq_00000")
    inside = write_trial(root, "zzzzz_00001", [1.0, 2.0], config={"training.lr": 0.002}).rename(root / "train_zzzzz_00001_1_lr=0.002")
    # An id without an underscore, as older Tune versions wrote them: one part of the name.
    single = write_trial(root, "qqqqqqqq", [1.0], config={"training.lr": 0.003}).rename(root / "train_qqqqqqqq_2_lr=0.003")
    for folder in (at_end, inside, single):
        (folder / store.RESULT_FILE).unlink()  # no row yet names the trial: only the folder's name does
    entries = [[json.dumps({"trial_id": t, "status": "PAUSED", store.CONFIG_KEY: {}}), json.dumps({"num_failures": 1})]
               for t in ("qqqqq_00000", "zzzzz_00001", "qqqqqqqq")]
    _write_state(root, entries)
    trials = {t.trial_id: t for t in store.read_trials(root, budget_env_steps=4000)}
    # Each entry found its folder: the state and failures are Tune's, the config the folder's params.json.
    assert {t: (trial.path, trial.state, trial.failures, trial.config) for t, trial in trials.items()} == {
        "qqqqq_00000": (at_end, "PAUSED", 1, {"training.lr": 0.001}),
        "zzzzz_00001": (inside, "PAUSED", 1, {"training.lr": 0.002}),
        "qqqqqqqq": (single, "PAUSED", 1, {"training.lr": 0.003})}
    assert not any("does not list" in p for p in store.resume_problems(root))  # each folder is an entry's


def test_a_folder_renamed_by_hand_is_still_its_listed_trial_by_the_id_its_rows_name(tmp_path):
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "exp")
    renamed = write_trial(root, "aaaaa_00000", [1.0, 2.0], config={"training.lr": 0.001}).rename(root / "renamed by hand")
    # A folder Tune recorded under a name that holds no trial id: found by that name alone.
    named = write_trial(root, "bbbbb_00001", [1.0], config={"training.lr": 0.002}).rename(root / "custom")
    (named / store.RESULT_FILE).unlink()
    entries = [
        [json.dumps({"trial_id": "aaaaa_00000", "status": "PAUSED", store.TRIAL_DIR_KEY: "train_aaaaa_00000_0_x"}),
         json.dumps({"num_failures": 1})],
        [json.dumps({"trial_id": "bbbbb_00001", "status": "PAUSED", store.TRIAL_DIR_KEY: "custom"}), json.dumps({"num_failures": 2})],
    ]
    _write_state(root, entries)
    trials = store.read_trials(root, budget_env_steps=4000)
    assert sorted((t.trial_id, t.path, t.state, t.failures, len(t.rows)) for t in trials) == [
        ("aaaaa_00000", renamed, "PAUSED", 1, 2), ("bbbbb_00001", named, "PAUSED", 2, 0)]
    assert not any("does not list" in p or "is gone" in p for p in store.resume_problems(root))


def test_a_file_swapped_for_a_fifo_or_a_link_loop_after_the_check_is_refused_without_blocking(tmp_path, monkeypatch):
    import os
    import threading

    fifo, loop = tmp_path / "result.json", tmp_path / "loop"
    os.mkfifo(fifo)
    loop.symlink_to(loop)
    # What was a regular file at the check is something else at the open (the race read_bytes guards).
    monkeypatch.setattr(store, "file_problem", lambda path: None)
    outcome = {}

    def read(path):
        try:
            store.read_bytes(path)
        except store.UnreadableFile as exc:
            outcome[path] = str(exc)

    for path in (fifo, loop):
        reader = threading.Thread(target=read, args=(path,), daemon=True)
        reader.start()
        reader.join(timeout=10)
        if reader.is_alive():  # blocked in open(): a writer lets it go, and the test fails
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            reader.join(timeout=10)
            raise AssertionError(f"reading {path} blocked")
    assert outcome == {fifo: f"{fifo}: is a FIFO, not a file", loop: f"{loop}: cannot be read (Too many levels of symbolic links)"}


@pytest.mark.parametrize(
    ("info", "problem"),
    [
        ({"sweep_id": "a b"}, "sweep_id must be letters, digits, '_' or '-', got 'a b'"),
        ({"sweep_id": 5}, "sweep_id must be letters, digits, '_' or '-', got 5"),
        ({"sweep_id": "abc", "path": 5}, "path must be a string, got 5"),
    ],
)
def test_a_sweep_file_with_a_wrong_id_or_path_is_refused_naming_it(tmp_path, info, problem):
    from rlsweep.errors import SweepError

    (tmp_path / store.SWEEP_FILE).write_text(json.dumps(info))
    with pytest.raises(SweepError) as refused:
        store.read_sweep_info(tmp_path)
    assert str(refused.value) == f"{tmp_path}: {store.SWEEP_FILE}: {problem}"


def test_a_sweep_id_of_upper_and_lower_case_letters_digits_and_dashes_reads(tmp_path):
    (tmp_path / store.SWEEP_FILE).write_text(json.dumps({"sweep_id": "AbC-09_z"}))
    assert store.read_sweep_info(tmp_path)["sweep_id"] == "AbC-09_z"


def test_a_state_that_is_not_tunes_and_a_trial_listed_twice_are_named(tmp_path):
    state = _write_state(tmp_path, 5)
    assert store.tune_state(tmp_path).problems == (f"{state}: is not a Tune experiment state (no list of trial entries)",)
    entry = [_entry(), "{}"]
    _write_state(tmp_path, [entry, entry])
    assert store.tune_state(tmp_path).problems == (f"{state}: trial entry 1 lists trial a1 a second time",)


def test_every_listed_trial_whose_folder_is_gone_is_missing_with_its_failures(tmp_path):
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "exp")
    here = write_trial(root, "aaaaa_00000", [1.0, 2.0], config={"training.lr": 0.001})
    entries = [[json.dumps({"trial_id": t, "status": "RUNNING", store.TRIAL_DIR_KEY: f}), json.dumps({"num_failures": n})]
               for t, f, n in (("aaaaa_00000", here.name, 0), ("bbbbb_00001", "gone_b", 2), ("ccccc_00002", "gone_c", 1))]
    state = _write_state(root, entries)
    missing = {t.trial_id: (t.path, t.failures, t.damage) for t in store.read_trials(root, budget_env_steps=4000) if t.state == store.MISSING}
    assert missing == {
        t: (root / f, n, (f"{root / f}: trial {t} is listed in {state.name} (RUNNING) but its folder is gone",))
        for t, f, n in (("bbbbb_00001", "gone_b", 2), ("ccccc_00002", "gone_c", 1))}


def test_the_spec_problems_trials_recorded_are_read_back_once_each_and_odd_records_are_skipped(tmp_path):
    from rlsweep.errors import Problem

    first, second, garbled, odd = (tmp_path / name for name in ("t1", "t2", "t3", "t4"))
    for folder in (first, second, garbled, odd):
        folder.mkdir()
    same = [Problem("config.training.lr", "must be > 0, got -1"), Problem("env", "no env 'X'")]
    store.write_spec_problems(lambda name, text: (first / name).write_text(text), same)
    store.write_spec_problems(lambda name, text: (second / name).write_text(text), [same[1], Problem("", "every trial fails")])
    (garbled / store.SPEC_PROBLEMS_FILE).write_text("[{cut")
    (odd / store.SPEC_PROBLEMS_FILE).write_text(json.dumps([5, {"message": "no path"}, {"path": "x"}]))
    assert [(p.path, p.message) for p in store.spec_problems(tmp_path)] == [
        ("config.training.lr", "must be > 0, got -1"), ("env", "no env 'X'"), ("", "every trial fails"), ("", "no path"), ("x", "")]
    (odd / store.SPEC_PROBLEMS_FILE).write_text(json.dumps(5))  # not a list: nothing of it is read
    assert len(store.spec_problems(tmp_path)) == 3


def test_seed_zero_is_saved_at_the_checkpoints_top_and_seed_k_below_it(tmp_path):
    assert store.seed_checkpoint_dir(tmp_path, 0) == tmp_path
    assert store.seed_checkpoint_dir(str(tmp_path), 2) == tmp_path / store.SEED_CHECKPOINTS / "2"


def test_trial_states_are_tunes_status_and_failures_for_the_entries_with_a_known_status(tmp_path):
    entries = [[_entry(), json.dumps({"num_failures": 3})], [json.dumps({"trial_id": "b2", "status": "WAITING"}), "{}"]]
    _write_state(tmp_path, entries)
    assert store.trial_states(tmp_path) == {"a1": ("RUNNING", 3)}
    assert store.trial_states(tmp_path / "none") == {}


def test_a_renamed_folder_with_a_garbled_line_and_a_status_tune_does_not_know_is_read_once(tmp_path, caplog):
    from tests.experiments import new_experiment, write_trial

    root = new_experiment(tmp_path / "exp")
    renamed = write_trial(root, "aaaaa_00000", [1.0, 2.0, 3.0, 4.0], config={"training.lr": 0.001}).rename(root / "renamed")
    with (renamed / store.RESULT_FILE).open("a") as handle:
        handle.write("{cut off\n")
    entry = [json.dumps({"trial_id": "aaaaa_00000", "status": "WAITING", store.TRIAL_DIR_KEY: "train_aaaaa_00000_0_x"}), "{}"]
    _write_state(root, [entry])
    with caplog.at_level("WARNING"):
        (trial,) = store.read_trials(root, budget_env_steps=4000)
    # No status Tune knows: its own rows tell, and they reached the budget.
    assert (trial.trial_id, trial.path, trial.state) == ("aaaaa_00000", renamed, store.TERMINATED)
    skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert skipped == [f"renamed: skipped 1 unreadable line(s) of {store.RESULT_FILE}"]


def test_a_checkpoint_whose_metadata_is_garbled_or_not_rlsweeps_is_named_as_not_complete(tmp_path):
    from rlsweep.errors import SweepError

    (tmp_path / store.CHECKPOINT_META).write_text("{cut")
    with pytest.raises(SweepError) as garbled:
        store.read_checkpoint_meta(tmp_path)
    assert str(garbled.value) == (f"{tmp_path}: not a complete rlsweep checkpoint "
                                  f"({tmp_path / store.CHECKPOINT_META}: is not JSON (JSONDecodeError))")
    (tmp_path / store.CHECKPOINT_META).write_text(json.dumps({"metrics": [1]}))
    with pytest.raises(SweepError) as foreign:
        store.read_checkpoint_meta(tmp_path)
    assert str(foreign.value) == f"{tmp_path}: not a complete rlsweep checkpoint ({store.CHECKPOINT_META} is not rlsweep's)"


def test_a_path_that_cannot_be_looked_at_is_named_with_the_systems_reason(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert store.file_problem(loop) == f"{loop}: cannot be read (Too many levels of symbolic links)"
