"""A package index of tiny packages, served on localhost, for the matrix and bisection tests.

uv resolves from it as from PyPI (its JSON simple API with upload times, so ``--exclude-newer``
works); nothing is downloaded and an environment is built in a fraction of a second. The
packages stand for the real ones by name where the harness cares about the name (``peft``, a
versioned library) and carry what the tests need: ``peft`` 0.11.1 imports ``setuptools``
without declaring it, as the real one did; ``packaging`` is this environment's own, so that the
harness's CLI runs in a tiny environment.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import importlib.metadata
import json
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path

# (name, version, upload day, requirements, the module's source)
RELEASES = [
    ("alpha", "1.0", "2024-01-01", (), "VERSION = '1.0'\n"),
    ("alpha", "1.1", "2024-03-01", (), "VERSION = '1.1'\n"),
    ("alpha", "2.0", "2024-06-01", (), "VERSION = '2.0'\nNEW_IN_2 = True\n"),
    ("beta", "1.0", "2023-12-01", ("alpha",), "import alpha\n"),
    ("setuptools", "60.0", "2023-01-01", (), ""),
    ("peft", "0.10.0", "2023-06-01", (), "VERSION = '0.10.0'\n"),
    ("peft", "0.11.0", "2023-09-01", (), "VERSION = '0.11.0'\n"),
    # As peft 0.11.1 did through torch.utils.cpp_extension: imports an undeclared setuptools.
    ("peft", "0.11.1", "2023-11-01", (), "import setuptools\nVERSION = '0.11.1'\n"),
    ("peft", "0.12.0", "2024-02-01", (), "VERSION = '0.12.0'\n"),
    ("peft", "0.13.0", "2024-05-01", (), "VERSION = '0.13.0'\n"),
    # A library whose import needs a module no rule provides (as bitsandbytes needed triton).
    ("accelerate", "0.1.0", "2023-01-01", (), "import triton\n"),
    # A floor declared too low (as torch-optimi 0.3 declares torch >= 2.2 and imports a name
    # torch has from 2.4): alpha 1.x resolves, and the import fails.
    ("torch-optimi", "0.3.3", "2024-07-01", ("alpha>=1.0",), "from alpha import NEW_IN_2\n"),
]
# Where a distribution's import name differs from its name (libraries.DECLARED_PACKAGES).
MODULES = {"torch-optimi": "optimi"}


def _record_hash(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(folder: Path, name: str, version: str, requires, files: dict[str, bytes]) -> Path:
    """A pure-Python wheel of ``files`` (archive path -> content)."""
    dist = f"{name.replace('-', '_')}-{version}"
    info = f"{dist}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {spec}\n" for spec in requires)
    contents = {
        **files,
        f"{info}/METADATA": metadata.encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = [f"{path},sha256={_record_hash(data)},{len(data)}" for path, data in contents.items()]
    record.append(f"{info}/RECORD,,")
    path = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in contents.items():
            archive.writestr(member, data)
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


def _this_packaging() -> tuple[str, dict[str, bytes]]:
    dist = importlib.metadata.distribution("packaging")
    files = {
        str(file): file.locate().read_bytes()
        for file in dist.files or ()
        if str(file).startswith("packaging/") and str(file).endswith(".py")
    }
    return dist.version, files


@dataclass
class LocalIndex:
    url: str  # the simple API's root: UV_INDEX_URL
    uploads: dict[str, list[tuple[Path, str]]]  # name -> (wheel, upload time)
    server: http.server.ThreadingHTTPServer

    def environment(self, cache: Path) -> dict[str, str]:
        """Variables that make uv (and the bisection's release listing) use only this index."""
        return {"UV_INDEX_URL": self.url, "UV_CACHE_DIR": str(cache), "UV_NO_CONFIG": "1",
                "UV_PYTHON_DOWNLOADS": "never"}  # fmt: skip


def serve(folder: Path) -> LocalIndex:
    """Build the wheels in ``folder`` and serve them; stop with ``index.server.shutdown()``."""
    folder.mkdir(parents=True, exist_ok=True)
    uploads: dict[str, list[tuple[Path, str]]] = {}
    for name, version, day, requires, source in RELEASES:
        module = {f"{MODULES.get(name, name)}/__init__.py": source.encode()}
        wheel = build_wheel(folder, name, version, requires, module)
        uploads.setdefault(name, []).append((wheel, f"{day}T00:00:00Z"))
    version, files = _this_packaging()
    uploads["packaging"] = [(build_wheel(folder, "packaging", version, (), files),
                             "2023-01-01T00:00:00Z")]  # fmt: skip

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server protocol
            name = self.path.strip("/").split("/")[-1]
            if name not in uploads:
                self.send_error(404)
                return
            page = {
                "meta": {"api-version": "1.1"},
                "name": name,
                "versions": [wheel.name.split("-")[1] for wheel, _ in uploads[name]],
                "files": [
                    {
                        "filename": wheel.name,
                        "url": wheel.as_uri(),
                        "upload-time": uploaded,
                        "hashes": {"sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()},
                    }
                    for wheel, uploaded in uploads[name]
                ],  # fmt: skip
            }
            body = json.dumps(page).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:  # quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return LocalIndex(f"http://127.0.0.1:{server.server_address[1]}/simple", uploads, server)
