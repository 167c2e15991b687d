"""Analysis: load an experiment directory, tables, the best trial and checkpoint by rule, MLflow export."""

from rlsweep.analysis._load import Best, CheckpointRecord, Sweep, Trial, load
from rlsweep.analysis._mlflow import export

__all__ = ["Best", "CheckpointRecord", "Sweep", "Trial", "export", "load"]
