"""Unit tests of web/install.py's wheel choice (no farm, no network)."""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location(
    "farm_install", os.path.join(HERE, "..", "..", "..", "web", "install.py"))
install = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(install)


def names(files):
    return [f["filename"] for f in files]


def test_a_stable_abi_wheel_installs_on_its_minor_and_every_later_one():
    assert install.python_fits("cp39", "abi3", "cp39")
    assert install.python_fits("cp39", "abi3", "cp312")
    assert not install.python_fits("cp312", "abi3", "cp311")  # built for a later Python
    assert not install.python_fits("cp39", "cp39", "cp312")   # not stable-ABI: that minor only
    assert not install.python_fits("cp39", "abi3", "pp310")   # not CPython


def test_the_own_tag_and_pure_python_wheels_fit():
    assert install.python_fits("cp311", "cp311", "cp311")
    assert install.python_fits("py3", "none", "cp311")
    assert install.python_fits("cp310.cp311", "cp310.cp311", "cp311")  # a compressed tag set
    assert not install.python_fits("cp310", "cp310", "cp311")


def test_choose_file_takes_the_newest_wheel_that_fits():
    files = [{"filename": "pkg-1.0+cu130-cp39-abi3-linux_x86_64.whl"},
             {"filename": "pkg-1.1+cu130-cp313-cp313-linux_x86_64.whl"},
             {"filename": "pkg-0.9+cu130-cp311-cp311-linux_x86_64.whl"},
             {"filename": "pkg-1.2+cu130-cp39-abi3-linux_aarch64.whl"},
             {"filename": "broken.whl"}]
    assert install.choose_file(files, "cp311", "x86_64")["filename"] == names(files)[0]
    assert install.choose_file(files, "cp313", "x86_64")["filename"] == names(files)[1]
    assert install.choose_file(files, "cp38", "x86_64") is None


if __name__ == "__main__":
    import pytest
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", __file__]))
