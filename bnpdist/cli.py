"""The ``bnpdist`` command line (also ``python -m bnpdist``).

Every subcommand accepts ``--scheduler ADDRESS`` (an existing Dask cluster; a scheduler file
path also works) or ``--local`` (the default: an in-process LocalCluster on 127.0.0.1), and
``--config FILE`` (YAML; keys are flag names with dashes or underscores, e.g. ``n-iter: 5``).
Bad input exits with status 2 before any work starts and writes nothing.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .data.errors import CorpusError

CONTEXT = dict(help_option_names=["-h", "--help"], max_content_width=100)


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
    ctx.default_map = {**(ctx.default_map or {}), **flat}
    return value


def cluster_options(f):
    """--scheduler/--local/--n-workers/TLS/--config, shared by every subcommand."""
    opts = [
        click.option("--config", type=click.Path(dir_okay=False), callback=_load_config,
                     is_eager=True, expose_value=False,
                     help="YAML file whose keys set any flag of this command (flags given on the line win)."),
        click.option("--scheduler", default=None, metavar="ADDRESS",
                     help="Dask scheduler address (tcp://host:8786, tls://...) or scheduler-file path. "
                          "Default: start an in-process LocalCluster."),
        click.option("--local", "local", is_flag=True, default=False,
                     help="Use an in-process LocalCluster on 127.0.0.1 (the default when --scheduler is not given)."),
        click.option("--n-workers", type=int, default=None, show_default="CPU count",
                     help="Workers of the local cluster."),
        click.option("--tls-ca", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="TLS CA certificate file (with --tls-cert/--tls-key: connect over TLS)."),
        click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="TLS client certificate file."),
        click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="TLS client private key file."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def open_engine(scheduler, local, n_workers, tls_ca, tls_cert, tls_key, quiet=False):
    """Start or connect the Dask engine and print the dashboard address."""
    from .distributed import Engine
    security = None
    if tls_ca or tls_cert or tls_key:
        if not (tls_ca and tls_cert and tls_key):
            raise click.UsageError("--tls-ca, --tls-cert and --tls-key must be given together")
        from distributed import Security
        security = Security(tls_ca_file=tls_ca, tls_client_cert=tls_cert, tls_client_key=tls_key,
                            require_encryption=True)
    if scheduler and local:
        raise click.UsageError("give either --scheduler or --local, not both")
    engine = Engine(scheduler=scheduler, n_workers=n_workers, security=security)
    if not quiet:
        click.echo(f"Dask dashboard: {engine.dashboard_link or '(disabled)'}", err=True)
    return engine


class _Main(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except CorpusError as e:
            click.echo(f"error: {e}", err=True)
            ctx.exit(2)


@click.group(cls=_Main, context_settings=CONTEXT)
@click.version_option(package_name="bnpdist")
def cli():
    """bnpdist: Bayesian nonparametric clustering (DP and NGGP mixtures) of Parquet corpora on Dask.

    \b
    Typical use:
      bnpdist generate bars --out data/bars          # synthetic or bundled data as Parquet
      bnpdist fit data/bars --out models/bars        # cluster it (ADF + EP) on a local Dask cluster
      bnpdist demo --out out/demo                    # end-to-end demo on bundled data
    Run `bnpdist COMMAND --help` for the flags of each command.
    """


@cli.command(context_settings=CONTEXT)
@click.argument("name", type=click.Choice(
    ["bars", "pitman-yor", "nyt", "chained-gaussians", "digits", "news", "tweets", "reuters"]))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False),
              help="Output folder (written atomically: a temp folder renamed into place).")
@click.option("--n-docs", type=int, default=None, help="Number of rows (synthetic sets; default: the seed's size).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--row-group-size", type=int, default=None, help="Rows per Parquet row group (= per partition).")
def generate(name, out, n_docs, seed, row_group_size):
    """Write a synthetic or bundled data set as Parquet (with a `label` column and vocab.txt)."""
    from .data.generate import generate as gen
    path = gen(name, out, n_docs=n_docs, seed=seed, row_group_size=row_group_size)
    click.echo(str(path))


def main():
    """Console-script entry point."""
    cli(prog_name="bnpdist")


if __name__ == "__main__":  # pragma: no cover
    main()
