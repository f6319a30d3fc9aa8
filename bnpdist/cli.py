"""The ``bnpdist`` command line (also ``python -m bnpdist``).

Every subcommand accepts ``--scheduler ADDRESS`` (an existing Dask cluster; a scheduler file
path also works) or ``--local`` (the default: an in-process LocalCluster on 127.0.0.1), TLS
credentials, and ``--config FILE`` (YAML; keys are flag names with dashes or underscores, e.g.
``n-iter: 5``). Bad input exits with status 2 before any work starts and writes nothing.
The work itself lives in :mod:`bnpdist.ops` (jobs and the model report).
"""
from __future__ import annotations

import difflib
import errno
import logging
import os
import sys
import warnings
from contextlib import nullcontext
from pathlib import Path

import click

from .data.errors import CorpusError
from .obs.registry import BY_CLI, cli_flags

CONTEXT = dict(help_option_names=["-h", "--help"], max_content_width=100)
CLUSTER_KEYS = ("scheduler", "local", "n_workers", "tls_ca", "tls_cert", "tls_key", "worker_timeout",
                "engine", "master")


def _load_config(ctx, _param, value):
    if value is None:
        return None
    import yaml
    try:
        cfg = yaml.safe_load(Path(value).read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise click.BadParameter(f"cannot read config {value}: {e}")
    if not isinstance(cfg, dict):
        raise click.BadParameter(f"config {value} must be a mapping of flag names to values")
    flat = {str(k).replace("-", "_"): v for k, v in cfg.items()}
    known = {p.name for p in ctx.command.params if p.name and p.expose_value}
    for key in sorted(set(flat) - known):
        close = difflib.get_close_matches(key, sorted(known), n=1)
        hint = f"; did you mean {close[0].replace('_', '-')!r}?" if close else ""
        raise click.BadParameter(f"config {value}: unknown key {key!r} for "
                                 f"`{ctx.command.name}`{hint}")
    ctx.default_map = {**(ctx.default_map or {}), **flat}
    return value


def cluster_options(f):
    """--config/--scheduler/--local/--n-workers/TLS, shared by every subcommand."""
    opts = [
        click.option("--config", type=click.Path(dir_okay=False), callback=_load_config,
                     is_eager=True, expose_value=False,
                     help="YAML file whose keys set any flag of this command (flags given on the line win)."),
        click.option("--scheduler", default=None, metavar="ADDRESS",
                     help="Dask scheduler address (tcp://host:8786, tls://...) or scheduler-file path. "
                          "Default: $DASK_SCHEDULER_ADDRESS if set, else an in-process LocalCluster."),
        click.option("--local", "local", is_flag=True, default=False,
                     help="Use an in-process LocalCluster on 127.0.0.1 (the default when no scheduler is given)."),
        click.option("--n-workers", type=int, default=None, show_default="CPU count",
                     help="Workers of the local cluster."),
        click.option("--tls-ca", type=click.Path(dir_okay=False), default=None,
                     help="TLS CA certificate file (with --tls-cert/--tls-key: connect over TLS).  [default: none]"),
        click.option("--tls-cert", type=click.Path(dir_okay=False), default=None,
                     help="TLS client certificate file.  [default: none]"),
        click.option("--tls-key", type=click.Path(dir_okay=False), default=None,
                     help="TLS client private key file.  [default: none]"),
        click.option("--worker-timeout", type=click.FloatRange(min=0), default=60.0, show_default=True,
                     help="Seconds to wait for a worker of the --scheduler cluster before exiting "
                          "with an error (0: wait forever)."),
        click.option("--engine", type=click.Choice(["dask", "spark"]), default="dask", show_default=True,
                     help="Run on Dask, or on Apache Spark (needs the [spark] extra and Java 17)."),
        click.option("--master", default=None, metavar="URL",
                     help="Spark master URL with --engine spark: local[2], spark://host:7077, yarn.  "
                          "[default: spark-submit's, else local[*]]"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def tls_security(tls_ca, tls_cert, tls_key):
    """The TLS security of the three files (all or none given), or None."""
    if not (tls_ca or tls_cert or tls_key):
        return None
    if not (tls_ca and tls_cert and tls_key):
        raise click.UsageError("--tls-ca, --tls-cert and --tls-key must be given together")
    for flag, path in (("--tls-ca", tls_ca), ("--tls-cert", tls_cert), ("--tls-key", tls_key)):
        if not Path(path).is_file():
            raise click.BadParameter(f"{path}: no such file", param_hint=flag)
    from .distributed import tls_security as security
    return security(tls_ca, tls_cert, tls_key)


def _check_protocol(address: str | None, security) -> None:
    """A tls:// address needs the TLS files and the TLS files need a tls:// address (a mismatch
    would otherwise only time out)."""
    if address is None or os.path.isfile(address):
        return
    if address.startswith("tls://") and security is None:
        raise click.UsageError(f"{address} is a tls:// address: give --tls-ca, --tls-cert and --tls-key")
    if security is not None and not address.startswith("tls://"):
        raise click.UsageError(f"TLS files given but the scheduler address {address} is not "
                               "tls://; use tls://HOST:PORT")


def open_engine(scheduler, local, n_workers, tls_ca, tls_cert, tls_key, worker_timeout=60.0,
                engine="dask", master=None, quiet=False):
    """Start or connect the Dask engine and print the dashboard address (stderr), or start the
    Spark engine on ``master``."""
    if engine == "spark":
        if scheduler or tls_ca or tls_cert or tls_key:
            raise click.UsageError("--scheduler and the TLS files apply to --engine dask")
        from .distributed.spark import SparkEngine
        return SparkEngine(master=master)
    if master is not None:
        raise click.UsageError("--master applies to --engine spark")
    from .distributed import DaskEngine, configured_scheduler
    from .distributed.logs import drop_worker_corpus_errors
    drop_worker_corpus_errors()
    if scheduler and local:
        raise click.UsageError("give either --scheduler or --local, not both")
    security = tls_security(tls_ca, tls_cert, tls_key)
    _check_protocol(scheduler or (None if local else configured_scheduler()), security)
    engine = DaskEngine(scheduler=scheduler, n_workers=n_workers, security=security,
                        worker_timeout=worker_timeout or None, local=local)
    if not quiet:
        click.echo(f"Dask dashboard: {engine.dashboard_link or '(disabled)'}", err=True)
    return engine


def _engine(kw: dict, quiet=False):
    return open_engine(*(kw.pop(k) for k in CLUSTER_KEYS), quiet=quiet)


def progress(desc: str, unit: str):
    """A ``(iterable, total=None, stage=None) -> iterable`` wrapper drawing a tqdm bar on
    stderr, named ``desc`` or, for a fit's later ``stage``, "desc · stage"; a run that ends before
    ``total`` (EP reached its tolerance) shows its bar complete. Each step is a point where a
    Ctrl-C that Python swallowed is raised again (``ops.interrupt``)."""
    from tqdm import tqdm

    from .ops.interrupt import raise_if_interrupted

    def wrap(iterable, total=None, stage=None):
        name = desc if stage is None else f"{desc} · {stage}"
        bar = tqdm(total=total, desc=name, unit=unit, file=sys.stderr, dynamic_ncols=True)
        with bar:
            for item in iterable:
                yield item          # counted once the caller is done with it
                raise_if_interrupted()
                bar.update()
            if bar.total is not None and bar.n < bar.total:
                bar.total = bar.n
                bar.refresh()
    return wrap


# --- model flags -------------------------------------------------------------------------
MODEL_KEYS = ("algorithm", "prior", "alpha", "a", "sigma", "tau", "family", "n_iter", "epsilon",
              "merge_threshold", "batch_size", "seed", "hyperparameters", "w")
#: the observation families' own flags (``--beta``, ``--kappa0``, ...), from their registry
FAMILY_FLAGS = cli_flags()
#: the names of ``bnpdist.mixture.ALGORITHMS`` (kept here so --help needs no numba import;
#: tests/test_cli.py checks the two agree)
ALGORITHM_NAMES = ("adf", "ep", "gibbs", "subcluster", "anneal", "ddpm-svm", "ddpm-lr")


class LibraryDefault(click.Option):
    """A model flag whose default is BNPMixture's own: the flag passes None when not given, so
    the library's default applies, and ``--help`` shows that default, read from the estimator's
    signature (imported only when help is shown)."""

    def get_help_record(self, ctx):
        from .ops.estimator import library_default
        saved = self.default, self.show_default
        self.default, self.show_default = library_default(self.name), True
        try:
            return super().get_help_record(ctx)
        finally:
            self.default, self.show_default = saved


def model_options(f):
    """The flags of a new BNPMixture (prior, family, algorithm and their hyperparameters); the
    ones the estimator takes directly default to the library's defaults (:class:`LibraryDefault`)."""
    opts = [
        click.option("--algorithm", type=click.Choice(ALGORITHM_NAMES), cls=LibraryDefault,
                     help="adf: one streaming pass; ep: an ADF pass, then EP passes; gibbs: collapsed "
                          "Gibbs (exact, sampled per partition on the workers); subcluster: exact "
                          "parallel split/merge sampler; anneal: subsample annealing; ddpm-svm / ddpm-lr: discriminative DP mixtures."),
        click.option("--prior", type=click.Choice(["dp", "nggp"]), default=None,
                     show_default="chosen by --hyperparameters auto, else dp",
                     help="Allocation prior: Dirichlet process or normalized generalized gamma process."),
        click.option("--alpha", type=float, default=None, show_default="1.0",
                     help="DP concentration (implies --prior dp)."),
        click.option("--a", "a", type=float, default=None, show_default="1.0",
                     help="NGGP mass a (implies --prior nggp)."),
        click.option("--sigma", type=float, default=None, show_default="0.5",
                     help="NGGP discount σ in [0, 1) (0.5: normalized inverse Gaussian; implies --prior nggp)."),
        click.option("--tau", type=float, default=None, show_default="1.0",
                     help="NGGP tilting τ ≥ 0 (implies --prior nggp)."),
        click.option("--family", type=click.Choice(list(BY_CLI)),
                     default=None, show_default="multinomial for bag-of-words, bernoulli for dense 0/1, gaussian "
                     "for other dense, then Student-t clusters where their evidence leads (ep, --hyperparameters auto)",
                     help="Observation family (gaussian: Gaussian clusters only)."),
        *(click.option(f.flag, f.dest, type=float, default=None, show_default=f.default, help=f.help)
          for f in FAMILY_FLAGS),
        click.option("--w", "w", type=float, cls=LibraryDefault,
                     help="ddpm-*: prior variance of the cluster hyperplanes η_k ~ N(0, w·I)."),
        click.option("--n-iter", type=int, cls=LibraryDefault,
                     help="ep: passes in all (the ADF pass included); samplers: sweeps (subcluster, "
                          "unset: until its chain is stationary, at most its default)."),
        click.option("--epsilon", type=float, default=None, show_default="max(σ, 0.01); counts: max(σ, 0.5)",
                     help="New-cluster threshold ε ≥ σ of the ADF pass; EP drops clusters "
                          "below ε and opens one only when q(new) > max(ε, 0.5)."),
        click.option("--merge-threshold", type=float, cls=LibraryDefault,
                     help="Merge clusters whose marginal-likelihood gain exceeds this (nats)."),
        click.option("--batch-size", type=int, default=None, show_default="whole partition",
                     help="ADF rows per partition per synchronisation round."),
        click.option("--seed", type=int, cls=LibraryDefault,
                     help="Random seed (the library's random_state: a fixed default, so a run repeats)."),
        click.option("--hyperparameters", type=click.Choice(["auto", "fixed"]), cls=LibraryDefault,
                     help="auto: choose the hyperparameters left unset (--family, --beta, ...) by "
                          "their evidence on a subsample (stream: on its first batch); "
                          "fixed: data-driven defaults."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _spec(kw: dict):
    from .ops.estimator import ModelSpec
    return ModelSpec(**{k: kw.pop(k) for k in MODEL_KEYS},
                     obs_params={f.dest: kw.pop(f.dest) for f in FAMILY_FLAGS})


def _build(spec):
    try:
        return spec.build()
    except ValueError as e:
        raise click.UsageError(str(e))


def _logging():
    """bnpdist's own INFO lines on stderr; Dask's (distributed, tornado, ...) only from WARNING."""
    from .distributed.logs import quiet_dask_loggers
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    logging.getLogger("bnpdist").setLevel(logging.INFO)
    quiet_dask_loggers()


# --- the group ---------------------------------------------------------------------------
class _Main(click.Group):
    """Exit codes: 0 done; 2 bad input or usage (the message names the file); 130 interrupted
    (Ctrl-C); 1 anything else, with a one-line message; a traceback only with ``--debug`` (or
    ``BNPDIST_DEBUG=1``)."""

    def invoke(self, ctx):
        from .distributed.logs import without_tracebacks
        from .ops.interrupt import EXIT_INTERRUPTED, interruptible
        from .ops.store import ModelError
        from .ops.target import OutputRefused
        debug = ctx.params.get("debug") or os.environ.get("BNPDIST_DEBUG") == "1"
        try:
            with interruptible(), nullcontext() if debug else without_tracebacks():
                return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt:
            if debug:
                raise
            click.echo("interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except (CorpusError, ModelError, OutputRefused) as e:
            if debug:
                raise
            click.echo(f"error: {e}", err=True)
            ctx.exit(2)
        except Exception as e:
            if debug:
                raise
            click.echo(f"error: {_one_line(e)}", err=True)
            ctx.exit(getattr(e, "exit_code", 1))      # e.g. 2: an address that is not a scheduler


def _one_line(e: BaseException) -> str:
    """A one-line description of an unexpected failure (disk full is named as such)."""
    if isinstance(e, OSError) and e.errno == errno.ENOSPC:
        return f"disk full: {e.filename or ''} {e.strerror}".replace("  ", " ")
    text = " ".join(str(e).split()) or type(e).__name__
    known = (FileExistsError, FileNotFoundError, PermissionError, TimeoutError, ConnectionError)
    return text if isinstance(e, known) or type(e).__module__.startswith("bnpdist") else \
        f"{type(e).__name__}: {text}"


@click.group(cls=_Main, context_settings=CONTEXT)
@click.version_option(package_name="bnpdist")
@click.option("--debug", is_flag=True, default=False,
              help="Show the full traceback of a failure (also BNPDIST_DEBUG=1).")
def cli(debug):
    """bnpdist: Bayesian nonparametric clustering (DP and NGGP mixtures) of Parquet corpora on Dask.

    \b
    Typical use:
      bnpdist generate bars --out data/bars          # synthetic or bundled data as Parquet
      bnpdist fit data/bars --out models/bars        # cluster it (ADF + EP) on a local Dask cluster
      bnpdist report models/bars --out bars.html     # plots of the fitted model
      bnpdist stream --watch incoming/ --model models/        # fold in new files, exactly once
      bnpdist recluster --model models/ --new incoming/       # nightly: ADF + EP, publish latest
      bnpdist demo --out out/demo                    # end-to-end demo on bundled data
    Run `bnpdist COMMAND --help` for the flags of each command.
    """
    from .distributed.logs import quiet_dask_loggers
    quiet_dask_loggers()
    warnings.showwarning = _warning_line


def _warning_line(message, category, filename, lineno, file=None, line=None):
    """A Python warning on the console as one line, ``warning: MESSAGE`` (no source file or line)."""
    click.echo(f"warning: {message}", err=True)


@cli.command(context_settings=CONTEXT)
@click.argument("source")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Model folder to write (model.json, arrays.npz, assignments.parquet, manifest.json).")
@click.option("--force", is_flag=True, default=False,
              help="Replace an existing model folder (a bnpdist model folder only: never the input, the current directory or a store's latest), once the new one is complete.")
@click.option("--vocab-size", type=int, default=None, show_default="from vocab.txt/vocab.parquet",
              help="Vocabulary size of bag-of-words data.")
@click.option("--n-partitions", type=int, default=None, show_default="one per Parquet row group",
              help="Read the data into this process and split it into N partitions (small data).")
@model_options
@cluster_options
def fit(source, out, force, vocab_size, n_partitions, **kw):
    """Fit a mixture on SOURCE (Parquet file, folder, glob or URL) and write a model folder.

    The input is validated before any work (bad input: exit 2, nothing written).
    """
    from .ops.batch import fit_to_dir
    from .ops.target import check_output
    est = _build(_spec(kw))
    check_output(out, source, kind="model", force=force)    # before starting any work
    with _engine(kw) as engine:
        fit_to_dir(engine, est, source, out, force=force, vocab_size=vocab_size,
                   n_partitions=n_partitions, progress=progress("fit", "step"))
    from .ops.report import settings
    run = dict(settings(est))
    click.echo(f"{out}: K={est.n_clusters_} clusters, {est.n_rows_seen_} rows; prior {run['prior']}; "
               f"{run['observation family']}; {run['algorithm']}")


@cli.command(context_settings=CONTEXT)
@click.argument("model", type=click.Path(file_okay=False))
@click.argument("source")
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="Assignments Parquet file to write (id, cluster, probability).")
@cluster_options
def predict(model, source, out, **kw):
    """Assign every row of SOURCE to a cluster of the model in MODEL (a model folder, or a
    model store: its `latest`)."""
    from .ops.batch import predict_to_file
    from .ops.lineage import read_ids
    from .ops.store import load_model, model_folder
    from .ops.target import check_output
    check_output(out, [model, source], kind="file")
    est = load_model(model)
    known = read_ids(model_folder(model))      # a store version: its stable cluster ids
    with _engine(kw) as engine:
        predict_to_file(engine, est, source, out, None if known is None else known[0])
    click.echo(out)


def _store_options(f):
    for o in reversed([
        click.option("--model", "model", required=True, type=click.Path(file_okay=False),
                     help="Model store folder (versions + `latest` link); created if missing."),
        click.option("--keep", type=int, default=10, show_default=True,
                     help="Model versions to keep (older ones are deleted)."),
        click.option("--vocab-size", type=int, default=None, show_default="the model's, else vocab.txt",
                     help="Vocabulary size of bag-of-words inputs."),
        click.option("--settle", type=click.FloatRange(min=0), default=5.0, show_default=True,
                     help="Seconds a new file's size and mtime must stay unchanged before it is "
                          "read (producers that write in place); 0 for write-then-rename producers."),
        click.option("--allow-missing", is_flag=True, default=False,
                     help="Read a missing input folder as empty (default: exit 2, e.g. an unmounted share)."),
    ]):
        f = o(f)
    return f


@cli.command(context_settings=CONTEXT)
@click.option("--watch", required=True, metavar="DIR|GLOB",
              help="Folder (top-level *.parquet) or glob of incoming Parquet files.")
@_store_options
@click.option("--once", is_flag=True, default=False,
              help="Process the files there now and exit (default: keep polling).")
@click.option("--poll", type=float, default=10.0, show_default=True, help="Seconds between polls.")
@model_options
@cluster_options
def stream(watch, model, keep, vocab_size, settle, allow_missing, once, poll, **kw):
    """Fold each new Parquet file into the model by ADF, exactly once.

    After each file the model and the manifest of consumed files (path, size, sha256) are
    published together as a new version of the store and `latest` is switched atomically; a
    killed stream resumes where `latest` says. Bad files are moved to DIR/quarantine/ with
    their reason (quarantine/reasons.jsonl). The model flags apply to an empty store only.
    """
    from .ops import ModelStore, run_stream
    from .ops.inputs import check_sources
    from .ops.target import check_output
    _logging()
    spec = _spec(kw)
    _build(spec)
    check_output(model, [watch], kind="store")
    check_sources([watch], allow_missing)
    with _engine(kw) as engine:
        res = run_stream(ModelStore(model), engine, watch, spec.build, once=once, poll=poll,
                         keep=keep, vocab_size=vocab_size, settle=settle,
                         progress=progress("stream", "file"), allow_missing=allow_missing)
    click.echo(f"consumed {len(res.consumed)} file(s), quarantined {len(res.quarantined)}, "
               f"skipped {len(res.duplicates)} already applied under another path"
               + (f", {len(res.waiting)} still being written" if res.waiting else ""))


@cli.command(context_settings=CONTEXT)
@_store_options
@click.option("--new", "new", required=True, multiple=True, metavar="DIR|GLOB",
              help="Folder or glob of new Parquet files (repeatable).")
@click.option("--ep-passes", type=int, default=10, show_default=True,
              help="EP passes over the window after the ADF pass (0: ADF fold-in of the new files only).")
@click.option("--window", type=int, default=None, show_default="all consumed files",
              help="EP over the last N consumed files only.")
@click.option("--start", type=click.Choice(["warm", "cold"]), default="warm", show_default=True,
              help="warm: EP starts from latest's statistics (one round gives every row its first "
                   "contribution); cold: from a new ADF pass.")
@model_options
@cluster_options
def recluster(model, keep, vocab_size, settle, allow_missing, new, ep_passes, window, start, **kw):
    """Nightly job: fold new files into MODEL/latest, refine by EP, publish a new version.

    Writes MODEL/<timestamp>/ (model + manifest) and then switches MODEL/latest atomically.
    A rerun on the same inputs changes nothing; a failed run leaves `latest` untouched.
    The model flags apply to an empty store only (later versions keep the first one's).
    """
    from .ops import ModelStore, recluster as run
    from .ops.inputs import check_sources
    from .ops.target import check_output
    _logging()
    spec = _spec(kw)
    _build(spec)
    check_output(model, list(new), kind="store")
    check_sources(new, allow_missing)
    with _engine(kw) as engine:
        res = run(ModelStore(model), engine, new, spec.build, ep_passes=ep_passes, window=window,
                  keep=keep, vocab_size=vocab_size, settle=settle, warm=start == "warm",
                  progress=progress("EP", "pass"), allow_missing=allow_missing)
    if res.version is None:
        click.echo("nothing new: latest unchanged")
    else:
        click.echo(f"published {res.version} ({len(res.new_files)} new file(s), K={res.n_clusters})")
        changes = Path(res.version) / "changes.txt"
        if changes.is_file():
            click.echo(changes.read_text(encoding="utf-8").splitlines()[0])


@cli.command(context_settings=CONTEXT)
@click.option("--model", "model", required=True, type=click.Path(file_okay=False, exists=True),
              help="Model store folder (versions + `latest` link).")
@click.option("--to", "to", default=None, metavar="VERSION", show_default="the version before latest",
              help="Version folder name to switch `latest` to.")
@cluster_options
def rollback(model, to, **kw):
    """Switch MODEL/latest back to an earlier version, atomically (newer versions are kept
    until --keep prunes them). The next stream or recluster run continues from it. Runs in
    this process (the cluster flags are accepted for uniformity)."""
    from .ops import ModelStore
    store = ModelStore(model)
    with store.lock():
        old, new = store.rollback(to)
    click.echo(f"latest: {old} -> {new}")


@cli.command(context_settings=CONTEXT)
@click.argument("model", type=click.Path(file_okay=False))
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="HTML file to write.")
@click.option("--assignments", type=click.Path(exists=True, dir_okay=False), default=None,
              show_default="MODEL/assignments.parquet if present",
              help="Assignments table for the confidence histogram.")
@click.option("--top-words", type=int, default=10, show_default=True, help="Words listed per cluster.")
@click.option("--max-clusters", type=click.IntRange(min=1), default=None, show_default="every cluster",
              help="Show only the largest N clusters in the per-cluster sections.")
@cluster_options
def report(model, out, assignments, top_words, max_clusters, **kw):
    """Write one HTML page of PNG plots about the model in MODEL (no cluster is needed)."""
    from .ops.report import write_report
    write_report(model, out, assignments=assignments, top_words=top_words, max_clusters=max_clusters)
    click.echo(out)


@cli.command(context_settings=CONTEXT)
@click.argument("name", type=click.Choice(
    ["bars", "pitman-yor", "nyt", "chained-gaussians", "digits", "news", "tweets", "reuters"]))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False),
              help="Output folder (written atomically: a temp folder renamed into place).")
@click.option("--n-docs", type=int, default=None, show_default="the seed's size",
              help="Number of rows (synthetic sets; bundled sets keep the first N).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--row-group-size", type=int, default=None, show_default="10000",
              help="Rows per Parquet row group (= per partition).")
@cluster_options
def generate(name, out, n_docs, seed, row_group_size, **kw):
    """Write a synthetic or bundled data set as Parquet (with a `label` column and vocab.txt).

    Runs in this process (the cluster flags are accepted for uniformity).
    """
    from .data.generate import generate as gen
    from .ops.target import check_output
    check_output(out, kind="folder")
    path = gen(name, out, n_docs=n_docs, seed=seed, row_group_size=row_group_size)
    click.echo(str(path))


@cli.command(context_settings=CONTEXT)
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Folder for the data, models, assignments and report.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@cluster_options
def demo(out, seed, **kw):
    """The main job: bundled digits and synthetic bars, known-groups model and ADF + EP mixtures.

    Writes DIR/data (Parquet), DIR/models/*, DIR/report.html and prints the metrics.
    """
    from .ops.demo import run_demo
    from .ops.target import check_output
    check_output(out, kind="folder")
    with _engine(kw) as engine:
        run_demo(engine, out, seed=seed, echo=click.echo, progress=progress("demo", "step"))


def _names(value: str | None):
    return None if not value else [v.strip() for v in value.split(",") if v.strip()]


def _seeds(value: str | None):
    if not value:
        return None
    try:
        lo, _, hi = value.partition("-")
        return list(range(int(lo), int(hi) + 1)) if hi else [int(v) for v in value.split(",")]
    except ValueError:
        raise click.BadParameter(f"seeds must be like 0-4 or 0,1,2, got {value!r}")


@cli.command(context_settings=CONTEXT)
@click.option("--what", type=click.Choice(["product", "adf", "ep", "read", "scale", "scaling", "outofcore", "auto", "traffic", "cold", "memory", "gibbs", "default", "subcluster", "quality"]),
              multiple=True, default=("product", "adf", "ep"), show_default=True,
              help="Benchmarks to run (repeatable): product = X·W bound (numba, scipy); adf / ep = "
                   "one ADF pass / EP passes in one process as ratios to X·W; read = Parquet into "
                   "partitions on the cluster; scale = ADF + 5 EP passes on the cluster with peak memory; "
                   "scaling = ADF + 2 EP passes over --n-docs / 100, / 10 and --n-docs documents on 1 "
                   "and 2 local worker processes (time, peak memory, speed-up, linearity, per-pass "
                   "overhead) and a pass over 10^7 documents simulated from the largest; outofcore = EP over "
                   "--n-docs documents on a worker process whose memory limit is a third of the "
                   "corpus's CSR (partitions re-read per pass, contributions on disk); "
                   "auto = the --hyperparameters auto search as a multiple of one fit; traffic = tasks, "
                   "graph bytes and bytes served per EP pass on the cluster; cold = a first fit with an "
                   "empty numba cache against the warm one; memory = an EP fit's peak allocation per row "
                   "against its CSR; gibbs = a collapsed Gibbs sweep against X·W; default = the default fit "
                   "(its CPU / wall and partitions) and subcluster = the sub-cluster sampler with every "
                   "default, each against BayesianGaussianMixture on blobs of 30,000 × 8 and "
                   "100,000 × 10; quality = the "
                   "quality league (every algorithm with every default against peers on labelled sets, "
                   "docs/QUALITY.md).")
@click.option("--n-docs", type=int, default=20_000, show_default=True,
              help="Documents of the NYT-shaped corpus (V = 7,841, K ≈ 100) generated for the run.")
@click.option("--out", type=click.Path(file_okay=False), default="out/league", show_default=True,
              help="quality: folder for league.json (every record) and league.md (the tables), "
                   "rewritten after every fit.")
@click.option("--quick", is_flag=True, default=False,
              help="quality: four small sets and seeds 0, 1 (a few minutes).")
@click.option("--sets", default=None, metavar="A,B,...", show_default="all but the extra ones",
              help="quality: the sets to run (names in docs/QUALITY.md; the extra dense sets run only when named).")
@click.option("--estimators", default=None, metavar="A,B,...", show_default="all",
              help="quality: the estimators to run (default, adf, ep, ..., stream, bgm-dp, "
                   "bgm-dirichlet, bnpy, gsdmm, kmeans-true-k, tfidf-kmeans-true-k).")
@click.option("--seeds", default=None, metavar="0-4|0,1,...", show_default="0-4 (--quick: 0,1)",
              help="quality: the seeds (samplers and bnpy get at most their first 3).")
@click.option("--n-jobs", type=int, default=1, show_default=True,
              help="quality: fits run in this many worker processes at once.")
@click.option("--fit-cpu-limit", type=float, default=120.0, show_default=True,
              help="quality: CPU seconds one fit may take; past it the fit is recorded as a timeout (0: no limit).")
@cluster_options
def bench(what, n_docs, out, quick, sets, estimators, seeds, n_jobs, fit_cpu_limit, **kw):
    """Time the kernels and passes against the sparse × dense bound X·W measured in the same run,
    or (--what quality) run the quality league and write its tables under --out."""
    from .bench import main_table
    from .ops.target import check_output
    if "quality" in what:
        check_output(out, kind="folder")
    timings = [w for w in what if w != "quality"]
    if timings:
        engine = _engine(kw) if {"read", "scale", "traffic"} & set(timings) else nullcontext(None)
        with engine as e:
            click.echo(main_table(timings, n_docs, engine=e))
    if "quality" in what:
        from .league import run_league, summary, write_results
        notes = []
        try:
            records = run_league(_names(sets), _names(estimators), _seeds(seeds), quick=quick,
                                 n_jobs=n_jobs, cpu_seconds=fit_cpu_limit or None,
                                 progress=progress("league", "fit"), notes=notes,
                                 on_record=lambda recs: write_results(recs, out, notes))
        except ValueError as e:
            raise click.UsageError(str(e))
        js, md = write_results(records, out, notes)
        click.echo(summary(records, notes))
        click.echo(f"\nwrote {md} and {js}")


@cli.command(context_settings=CONTEXT)
@click.option("--kind", "kinds", multiple=True, type=click.Choice(["dense", "binary", "documents"]),
              help="Data kind to warm up (repeatable).  [default: every kind]")
def warmup(kinds):
    """Compile the numba kernels of fit, predict, stream and recluster into the cache.

    Runs them on tiny data of each kind in this process; the compiled kernels go to
    $NUMBA_CACHE_DIR (else next to the sources), where later jobs load them instead of
    compiling them again.  Run it where the jobs' processes will run (image build, job start).
    """
    from .ops.warmup import KINDS, cache_dir, warmup as run
    steps = run(kinds or tuple(KINDS), progress=progress("warmup", "kind"))
    for s in steps:
        click.echo(f"{s.name}: {s.compiled} kernel versions compiled, {s.loaded} loaded from the cache "
                   f"({s.seconds:.1f} CPU s)")
    click.echo(f"total: {sum(s.compiled for s in steps)} compiled, {sum(s.loaded for s in steps)} "
               f"loaded; cache: {cache_dir()}")


def main():
    """Console-script entry point."""
    cli(prog_name="bnpdist")


if __name__ == "__main__":  # pragma: no cover
    main()
