"""BLAS selection against the real alternatives installed here (OpenBLAS, BLIS, ATLAS,
reference): each is resolved, selected through LD_LIBRARY_PATH and really loaded in a
subprocess, which must report that very library."""

from __future__ import annotations

import os

import pytest

from rmax import blas
from rmax.errors import RmaxError

ALTERNATIVES = """\
Name: libblas.so.3-x86_64-linux-gnu
Link: /usr/lib/x86_64-linux-gnu/libblas.so.3
Status: auto
Best: /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3
Value: /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3

Alternative: /usr/lib/x86_64-linux-gnu/atlas/libblas.so.3
Priority: 35

Alternative: /usr/lib/x86_64-linux-gnu/blas/libblas.so.3
Priority: 10

Alternative: /usr/lib/x86_64-linux-gnu/blis-pthread/libblas.so.3
Priority: 75

Alternative: /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3
Priority: 100
"""

FAMILIES = ["openblas", "blis", "atlas", "reference"]


def _have(name: str) -> bool:
    return any(lib.name == name for lib in blas.installed())


def test_parse_alternatives():
    alts, current = blas.parse_alternatives(ALTERNATIVES)
    assert current == "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"
    assert alts["/usr/lib/x86_64-linux-gnu/blis-pthread/libblas.so.3"] == 75
    assert len(alts) == 4


def test_family_names():
    assert blas.family_of("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3") == ("openblas", "libopenblas0-pthread")
    assert blas.family_of("/usr/lib/x86_64-linux-gnu/blis-openmp/libblas.so.3")[0] == "blis"
    assert blas.family_of("/usr/lib/x86_64-linux-gnu/atlas/libblas.so.3") == ("atlas", "libatlas3-base")
    assert blas.family_of("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3") == ("reference", "libblas3")


def test_installed_lists_every_alternative():
    libs = blas.installed()
    assert libs, "no libblas.so.3 at all"
    for lib in libs:
        assert os.path.exists(lib.path) and lib.path.startswith(lib.dir + "/")
    assert sum(lib.selected for lib in libs) <= 1
    names = {lib.name for lib in libs}
    assert "openblas" in names  # the default the install step puts in


@pytest.mark.parametrize("name", FAMILIES)
def test_selected_library_is_the_one_loaded(name):
    if not _have(name):
        pytest.skip(f"{name} not installed")
    lib = blas.resolve(name)
    assert lib.name == name
    got = blas.loaded(blas.env_for(lib))
    assert got["name"] == name, got
    assert os.path.realpath(got["path"]).startswith(os.path.realpath(lib.dir)), got
    assert got["dgemm_ok"] is True
    assert got["package"] == lib.package


def test_blis_really_reports_blis():
    if not _have("blis"):
        pytest.skip("blis not installed")
    got = blas.loaded(blas.env_for(blas.resolve("blis")))
    assert got["name"] == "blis"
    assert got["identified_by"] == "BLIS_ARCH_DEBUG"  # BLIS said so itself, not only its path
    assert got["config"].startswith("sub-configuration ")


def test_openblas_reports_its_config():
    got = blas.loaded(blas.env_for(blas.resolve("openblas")))
    assert got["identified_by"] == "openblas_get_config"
    assert got["config"].startswith("OpenBLAS ") and got["version"]
    assert isinstance(got["threads"], int)


@pytest.mark.skipif(not _have("openblas") or "avx2" not in blas._cpu_flags(), reason="needs OpenBLAS and AVX2")
def test_narrow_kernels_the_user_chose_are_named_as_the_users_choice_and_kept():
    # Sandybridge: OpenBLAS's AVX kernels, narrower than any CPU with AVX2 can run. A value the user
    # set is never overridden, so the warning must not claim that rmax fixes it.
    env = {**blas.env_for(blas.resolve("openblas")), "OPENBLAS_CORETYPE": "Sandybridge"}
    got = blas.loaded(env)
    assert got["config"].endswith("(core Sandybridge)"), got["config"]
    (why,) = got["warnings"]
    assert "OPENBLAS_CORETYPE=Sandybridge is set in the environment, and rmax keeps it" in why, why
    assert "rmax sets it" not in why
    assert "OPENBLAS_CORETYPE" not in blas.kernel_env(env)


@pytest.mark.skipif("avx2" not in blas._cpu_flags(), reason="needs AVX2")
def test_narrow_kernels_an_old_openblas_picks_itself_are_set_right_by_rmax(monkeypatch):
    # What the probe reports for an OpenBLAS too old to know the CPU, with nothing set by the user.
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    ((env, why),) = blas._kernel_fixes("openblas", {"openblas_core": "Sandybridge"})
    assert env == {"OPENBLAS_CORETYPE": "SkylakeX" if "avx512f" in blas._cpu_flags() else "Haswell"}
    assert "it does not know this CPU model" in why and "rmax sets it for the jobs it launches" in why
    assert blas._kernel_fixes("openblas", {"openblas_core": "SkylakeX"}) == []


def test_default_environment_loads_a_blas():
    got = blas.loaded()
    assert got["name"] and got["path"]


def test_env_for_prepends_to_existing_path():
    lib = blas.resolve("openblas")
    env = blas.env_for(lib, base={"LD_LIBRARY_PATH": f"/opt/x:{lib.dir}:/opt/y"})
    assert env == {"LD_LIBRARY_PATH": f"{lib.dir}:/opt/x:/opt/y"}
    assert blas.env_for(lib, base={}) == {"LD_LIBRARY_PATH": lib.dir}


def test_resolve_by_folder_variant_and_path():
    lib = blas.resolve("openblas")
    assert blas.resolve(lib.variant) == lib
    assert blas.resolve(lib.path) == lib
    assert blas.resolve(lib.dir) == lib


def test_library_not_named_libblas_gets_a_shim(tmp_path, monkeypatch):
    target = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0"
    if not os.path.exists(target):
        pytest.skip("no libopenblas.so.0")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    lib = blas.resolve(target)
    assert lib.name == "openblas" and lib.dir.startswith(str(tmp_path))
    assert os.path.realpath(os.path.join(lib.dir, "libblas.so.3")) == os.path.realpath(target)
    assert blas.loaded(blas.env_for(lib))["name"] == "openblas"


def test_unknown_name_is_a_clear_error():
    with pytest.raises(RmaxError) as e:
        blas.resolve("nosuchblas")
    assert "unknown BLAS 'nosuchblas'" in e.value.message and "openblas" in e.value.hint


@pytest.mark.parametrize("name,package", [("openblas", "libopenblas0-pthread"), ("blis", "libblis4-pthread"),
                                          ("atlas", "libatlas3-base"), ("reference", "libblas3")])
def test_known_but_missing_names_the_package(monkeypatch, name, package):
    monkeypatch.setattr(blas, "installed", lambda: [])
    with pytest.raises(RmaxError) as e:
        blas.resolve(name)
    assert "not installed" in e.value.message and f"apt-get install {package}" in e.value.hint


def test_non_blas_library_is_refused():
    libm = next((p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6")
                 if os.path.exists(p)), None)
    if libm is None:
        pytest.skip("no libm.so.6 here")
    with pytest.raises(RmaxError) as e:
        blas.resolve(libm)
    assert "not a BLAS" in e.value.message and "dgemm_" in e.value.message


def test_non_library_and_missing_paths_are_refused(tmp_path):
    junk = tmp_path / "libblas.so.3"
    junk.write_text("not an ELF file\n")
    with pytest.raises(RmaxError, match="not a loadable shared library"):
        blas.resolve(str(junk))
    with pytest.raises(RmaxError, match="does not exist"):
        blas.resolve(str(tmp_path / "nothing" / "libblas.so.3"))
