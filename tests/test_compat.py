"""What rlsweep changes inside Ray (``rlsweep._compat``), on Ray's own objects."""

from __future__ import annotations

import copy
import pickle


def test_a_finished_trial_keeps_only_the_metrics_statistics():
    from ray.tune.trainable.metadata import _TrainingRunMetadata

    from rlsweep import _compat

    metadata = _TrainingRunMetadata()
    for step in range(1, 4):
        for key in ("return_mean", "rllib/timers/training_iteration", "env_steps"):
            metadata.update_metric(key, float(step), step=step)
    before = len(metadata.get_json_state())

    class Finished:  # a Tune trial's shape as far as the trimmer looks: its run metadata
        run_metadata = metadata

    _compat.forget_finished_trial(Finished(), keep={"return_mean"})
    assert set(metadata.metric_analysis) == set(metadata.metric_n_steps) == {"return_mean"}
    assert metadata.metric_analysis["return_mean"]["max"] == 3.0
    assert len(metadata.get_json_state()) < before / 2  # the cached state was rebuilt without them


def test_the_lean_json_logger_forgets_a_trial_once_it_ended_and_pickles_by_reference(tmp_path):
    from rlsweep import _compat

    logger = _compat.lean_json_logger_class()()
    trial = object()
    logger._trial_configs[trial] = {"training.lr": 0.1}
    logger._trial_files[trial] = (tmp_path / "result.json").open("w")
    logger.log_trial_end(trial)
    assert trial not in logger._trial_configs and trial not in logger._trial_files
    assert type(pickle.loads(pickle.dumps(logger))).__name__ == "LeanJsonLoggerCallback"
    tracker = _compat.forget_finished_trials_class()("return_mean")
    assert pickle.loads(pickle.dumps(tracker)).metric == "return_mean"


def test_a_lookback_buffer_made_without_the_space_setter_equals_rllibs():
    import numpy as np
    from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer

    from rlsweep import _compat

    for data, lookback in ((np.full((2,), 3), 1), (np.ones((1,)), 0), (np.arange(3.0), 4), ([1.0, 2.0], 1)):
        made = _compat.lookback_buffer(copy.copy(data), lookback)
        rllibs = InfiniteLookbackBuffer(copy.copy(data), lookback=lookback)
        assert made == rllibs and list(vars(made)) == list(vars(rllibs)), (data, lookback)
        for name, value in vars(rllibs).items():
            assert type(vars(made)[name]) is type(value) and np.array_equal(vars(made)[name], value), name
        assert made.get(-1) == rllibs.get(-1) and len(made) == len(rllibs)
