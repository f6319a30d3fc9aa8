import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

#: BNPDIST_FULL=1 runs the long statistical versions of marked tests.
FULL = os.environ.get("BNPDIST_FULL") == "1"


def load_job(name: str):
    """The script ``jobs/NAME.py`` as a module (the referees' models and tables, the experiments)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "jobs" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def tls_credentials(tmp_path):
    """``{"ca", "cert", "key"}`` paths of a throw-away CA and certificate for 127.0.0.1, made by
    the deployment's ``deploy/tls/make_certs.py`` (imported by path)."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "deploy" / "tls" / "make_certs.py"
    spec = importlib.util.spec_from_file_location("make_certs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_credentials(tmp_path / "tls", ("127.0.0.1", "localhost"), days=1)


@pytest.fixture(scope="module")
def bars_folder(tmp_path_factory):
    """A small bag-of-words corpus (80 bars documents with labels and vocab.txt)."""
    from bnpdist.data import write_bow
    from bnpdist.data.synthetic import make_bars
    d = tmp_path_factory.mktemp("bars") / "bars"
    X, y, _ = make_bars(80, seed=2)
    write_bow(d / "part-0.parquet", X, labels=y, vocab=[f"p{i}" for i in range(64)])
    return d


@pytest.fixture(scope="module")
def bars_model(bars_folder, tmp_path_factory):
    """A model folder fitted on ``bars_folder`` by ``bnpdist fit`` (two EP passes)."""
    from click.testing import CliRunner

    from bnpdist.cli import cli
    out = tmp_path_factory.mktemp("bars-model") / "m"
    res = CliRunner().invoke(cli, ["fit", str(bars_folder), "--out", str(out), "--n-workers", "1",
                                   "--n-iter", "2", "--hyperparameters", "fixed"])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="session")
def spark():
    """One Spark session for every test that needs it: ``local[2,3]`` (two task slots, a task
    retried up to 3 times), the driver bound to 127.0.0.1, no web UI; skipped without pyspark
    or a Java runtime (.ci/run installs both)."""
    import shutil
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime (.ci/run installs one)")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from bnpdist.distributed.spark import spark_session
    session = spark_session("local[2,3]")
    yield session
    session.stop()
