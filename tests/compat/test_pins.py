"""Torch pins from --torch, requirements files, pyproject.toml and lock files."""
import pytest

from gpudoctor.compat.pins import PinError, parse_pin, pins_from_file, variant_from_index


def w(tmp_path, name, text):
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize(
    "text,version,variant",
    [
        ("2.5.1+cu124", "2.5.1+cu124", "cu124"),
        ("2.5.1", "2.5.1", None),
        ("torch==2.11.0", "2.11.0", None),
        ("2.11.0+cpu", "2.11.0+cpu", "cpu"),
        ("2.6.0+rocm6.2.4", "2.6.0+rocm6.2.4", "rocm6.2.4"),
        ("2.12.0rc3", "2.12.0rc3", None),
    ],
)
def test_parse_pin(text, version, variant):
    p = parse_pin(text)
    assert (p.version, p.variant) == (version, variant)


@pytest.mark.parametrize("text", ["latest", "2", "torch>=2.1", "2.5.*", "", "cu124"])
def test_parse_pin_rejects(text):
    with pytest.raises(PinError):
        parse_pin(text)


def test_index_url():
    assert variant_from_index("https://download.pytorch.org/whl/cu124") == "cu124"
    assert variant_from_index("https://download.pytorch.org/whl/nightly/cu130/") == "cu130"
    assert variant_from_index("https://pypi.org/simple") is None


def test_requirements_with_index_include_and_companions(tmp_path):
    w(tmp_path, "base.txt", "torchvision==0.20.1  # vision\nnumpy\n")
    f = w(tmp_path, "requirements-gpu.txt",
          "-r base.txt\n--index-url https://download.pytorch.org/whl/cu121\ntorch==2.5.1 ; sys_platform == 'linux'\n")
    [p] = pins_from_file(f)
    assert (p.version, p.variant, p.line) == ("2.5.1", "cu121", 3) and p.companions == {"torchvision": "0.20.1"}


def test_requirements_local_suffix_and_direct_url(tmp_path):
    [p] = pins_from_file(w(tmp_path, "r.txt", "torch==2.6.0+cu126\n"))
    assert p.variant == "cu126"
    url = "https://download.pytorch.org/whl/cu121/torch-2.1.0%2Bcu121-cp311-cp311-linux_x86_64.whl"
    [p] = pins_from_file(w(tmp_path, "r2.txt", f"torch @ {url}\n"))
    assert (p.version, p.variant) == ("2.1.0+cu121", "cu121")


@pytest.mark.parametrize("text", ["torch>=2.1\n", "torch\n", "torch~=2.5.0\n", "numpy==1.0\n"])
def test_requirements_errors(tmp_path, text):
    with pytest.raises(PinError):
        pins_from_file(w(tmp_path, "requirements.txt", text))


def test_missing_file():
    with pytest.raises(PinError, match="no such file"):
        pins_from_file("/nonexistent/requirements.txt")


def test_pyproject_pep621_with_uv_index(tmp_path):
    f = w(tmp_path, "pyproject.toml", """
[project]
name = "x"
dependencies = ["torch==2.7.1", "torchvision==0.22.1"]
[tool.uv.sources]
torch = [{ index = "pytorch-cu118", marker = "sys_platform == 'linux'" }]
[[tool.uv.index]]
name = "pytorch-cu118"
url = "https://download.pytorch.org/whl/cu118"
explicit = true
""")
    [p] = pins_from_file(f)
    assert (p.version, p.variant, p.companions) == ("2.7.1", "cu118", {"torchvision": "0.22.1"})


def test_pyproject_poetry_source(tmp_path):
    f = w(tmp_path, "pyproject.toml", """
[tool.poetry.dependencies]
python = "^3.11"
torch = { version = "2.4.1", source = "torch-cu124" }
[[tool.poetry.source]]
name = "torch-cu124"
url = "https://download.pytorch.org/whl/cu124"
priority = "explicit"
""")
    [p] = pins_from_file(f)
    assert (p.version, p.variant) == ("2.4.1", "cu124")
    with pytest.raises(PinError, match="not pinned"):
        pins_from_file(w(tmp_path, "b/pyproject.toml", '[tool.poetry.dependencies]\ntorch = "^2.4"\n'))


def test_uv_lock(tmp_path):
    f = w(tmp_path, "uv.lock", """
version = 1
[[package]]
name = "torch"
version = "2.5.1+cu124"
source = { registry = "https://download.pytorch.org/whl/cu124" }
[[package]]
name = "torch"
version = "2.5.1"
source = { registry = "https://pypi.org/simple" }
[[package]]
name = "torchvision"
version = "0.20.1+cu124"
source = { registry = "https://download.pytorch.org/whl/cu124" }
""")
    pins = pins_from_file(f)
    assert [(p.version, p.variant) for p in pins] == [("2.5.1+cu124", "cu124"), ("2.5.1", None)]
    assert pins[0].companions == {"torchvision": "0.20.1+cu124"}


def test_poetry_lock(tmp_path):
    f = w(tmp_path, "poetry.lock", """
[[package]]
name = "torch"
version = "2.3.1+cu118"
optional = false
[package.source]
type = "legacy"
url = "https://download.pytorch.org/whl/cu118"
reference = "torch-cu118"
""")
    [p] = pins_from_file(f)
    assert (p.version, p.variant) == ("2.3.1+cu118", "cu118")


def test_pdm_lock_version_from_files(tmp_path):
    f = w(tmp_path, "pdm.lock", """
[[package]]
name = "torch"
version = "2.6.0"
files = [
    {file = "torch-2.6.0+cu126-cp312-cp312-linux_x86_64.whl", hash = "sha256:00"},
]
""")
    [p] = pins_from_file(f)
    assert (p.version, p.variant) == ("2.6.0+cu126", "cu126")


def test_bad_toml(tmp_path):
    with pytest.raises(PinError, match="not valid TOML"):
        pins_from_file(w(tmp_path, "uv.lock", "[[package\n"))
