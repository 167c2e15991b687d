"""An install without this repository's scripts: ``python -m build`` makes a source archive and a wheel that
hold every file of the package (its data too), and the wheel installs into a fresh virtual environment and
runs ``rlsweep --version`` and ``rlsweep validate`` on the demo's spec from there, not from the source tree.

The fresh environment gets the project environment's dependencies through a ``.pth`` file (after its own
site-packages, so the wheel's rlsweep is the one imported) instead of installing them again: what is tested
is the wheel, not the dependencies' install (``scripts/_setup.sh`` and CI's run install those). The demo's
sweep itself is not run here (2 minutes of real trials; the end-to-end tests run sweeps from the source)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from rlsweep import __version__
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # ~15 s: the build, an install, and validate's imports of Ray and RLlib


def _tracked(*paths: str) -> list[str]:
    return subprocess.run(["git", "ls-files", "--", *paths], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()


def _demo_spec() -> Path:
    """The spec ``scripts/demo`` validates and runs."""
    (spec,) = re.findall(r"^rlsweep validate (\S+)$", (REPO / "scripts" / "demo").read_text(), re.MULTILINE)
    return REPO / spec


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m build`` of a copy of the package's committed files (the source tree stays untouched: the
    build writes its scratch folders beside the sources); returns the folder holding what it made."""
    source = tmp_path_factory.mktemp("source")
    for name in _tracked("pyproject.toml", "README.md", "rlsweep"):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(source)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_the_wheel_holds_every_file_of_the_package(built):
    (wheel,) = built.glob("rlsweep-*.whl")
    assert wheel.name.startswith(f"rlsweep-{__version__}-")
    with zipfile.ZipFile(wheel) as archive:
        held = set(archive.namelist())
    missing = [name for name in _tracked("rlsweep") if name not in held]
    assert not missing, f"the wheel lacks {missing} (package data is listed in pyproject.toml's package-data)"
    assert {"rlsweep/py.typed", "rlsweep/data/zoo_hyperparams.yaml"} <= held
    assert len(list(built.glob("rlsweep-*.tar.gz"))) == 1


def test_the_wheel_installs_into_a_fresh_environment_and_runs(built, tmp_path):
    (wheel,) = built.glob("rlsweep-*.whl")
    fresh = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(fresh)], check=True, timeout=120)
    python = fresh / "bin" / "python"
    # Installed before the fresh environment sees the project's: pip finds no other rlsweep to replace.
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz_project_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    # From a folder that holds no source, with nothing on PYTHONPATH: only the installed wheel can answer.
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")} | {"HOME": str(tmp_path)}

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)

    where = run(str(python), "-c", "import rlsweep; print(rlsweep.__file__)")
    assert Path(where.stdout.strip()).is_relative_to(fresh), (where.stdout, where.stderr)
    version = run(str(fresh / "bin" / "rlsweep"), "--version")
    assert version.returncode == 0 and version.stdout.strip() == f"rlsweep {__version__}", version
    spec = _demo_spec()
    valid = run(str(fresh / "bin" / "rlsweep"), "validate", str(spec))
    assert valid.returncode == 0, valid.stderr[-3000:]
    assert f"{spec}: valid (" in valid.stdout
