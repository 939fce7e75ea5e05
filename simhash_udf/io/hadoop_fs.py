"""The Hadoop FileSystem calls the output's safety needs (commit, lock, clean-up), on any Hadoop file system.

Why a wrapper: the commit, the lock and the clean-up are written once against these few calls (not py4j
idioms scattered through them), and a test can drive exactly that code from a bare JVM, without a
SparkSession, when it kills a process after every step of the commit."""
from __future__ import annotations

import os
import posixpath
import re

from py4j.protocol import Py4JJavaError

GLOB_CHARS = "*?[{"
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")  # as Hadoop's Path reads one: file:/x, hdfs://nn/x


class FileExists(Exception):
    """An exclusive create found the file already there."""


def java_class(exc: BaseException) -> str:
    """The Java exception class behind a py4j error ("" for a Python exception)."""
    if isinstance(exc, Py4JJavaError):
        try:
            return exc.java_exception.getClass().getName()
        except Exception:  # the gateway may be gone
            return ""
    return ""


def java_message(exc: BaseException) -> str:
    if isinstance(exc, Py4JJavaError):
        try:
            return f"{exc.java_exception.getClass().getSimpleName()}: {exc.java_exception.getMessage()}"
        except Exception:
            pass
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class HadoopFS:
    """One Hadoop FileSystem (the one of `path`) and the operations the output's commit and lock use."""

    def __init__(self, jvm, hadoop_conf, path: str):
        self._jvm = jvm
        self._conf = hadoop_conf
        self._Path = jvm.org.apache.hadoop.fs.Path
        self.fs = self._Path(path).getFileSystem(hadoop_conf)
        self.fs.setWriteChecksum(False)  # no .crc siblings next to report.json, _SUCCESS and the lock
        self.scheme = self.fs.getUri().getScheme() or ""

    @classmethod
    def for_spark(cls, spark, path: str) -> "HadoopFS":
        sc = spark.sparkContext
        return cls(sc._jvm, sc._jsc.hadoopConfiguration(), path)

    def _p(self, path: str):
        return self._Path(path)

    def qualified(self, path: str) -> str:
        """`path` as the file system names it (scheme, authority, absolute, `.`/`..`/`//` and a trailing `/`
        removed: Hadoop's makeQualified), with symbolic links resolved (resolved)."""
        return qualified_path(self._jvm, self._conf, path)

    def exists(self, path: str) -> bool:
        return bool(self.fs.exists(self._p(path)))

    def status(self, path: str):
        """(is_dir, modification time in ms) or None when nothing is there."""
        try:
            st = self.fs.getFileStatus(self._p(path))
        except Py4JJavaError as exc:
            if java_class(exc) == "java.io.FileNotFoundException":
                return None
            raise
        return bool(st.isDirectory()), int(st.getModificationTime())

    def nearest_existing(self, path: str | None) -> tuple[str, bool] | None:
        """(path, is_dir) of the first of `path` and its ancestors that exists; None when none does."""
        while path is not None:
            status = self.status(path)
            if status is not None:
                return path, status[0]
            path = self.parent(path)
        return None

    def resolve(self, path: str) -> tuple[str, bool]:
        """(`path` with symbolic links resolved, whether that changed which path it names), for what must not
        depend on how a path is spelled (the output's lock and replacement). On the local file system: the real
        path (os.path.realpath of the existing part), as a plain path when `path` was written without a scheme,
        else as a file: URI. On others: the nearest existing ancestor as FileSystem.resolvePath gives it (HDFS
        symbolic links, viewfs mount points), the rest of the path appended; qualified but unresolved where the
        file system cannot resolve."""
        qualified = self.fs.makeQualified(self._p(path))
        if self.scheme == "file":
            local = os.path.normpath(qualified.toUri().getPath())
            real = os.path.realpath(local)
            return ("file:" + real if SCHEME.match(path) else real), real != local
        real = resolve_remote(self.fs, self._Path, qualified)
        return real, real != qualified.toString()

    def files_under(self, path: str) -> list[str]:
        """The paths, relative to directory `path`, of every file below it at any depth: one recursive listing
        (FileSystem.listFiles; a flat listing on object stores), files only; [] when `path` does not exist."""
        root = self.fs.makeQualified(self._p(path))
        prefix = root.toUri().getPath().rstrip("/") + "/"
        try:
            found, it = [], self.fs.listFiles(root, True)
        except Py4JJavaError as exc:
            if java_class(exc) == "java.io.FileNotFoundException":
                return []
            raise
        while it.hasNext():
            file_path = it.next().getPath().toUri().getPath()
            found.append(file_path[len(prefix):] if file_path.startswith(prefix) else file_path)
        return found

    def list(self, path: str) -> list[tuple[str, bool]]:
        """(name, is_dir) of the entries of a directory; [] when it does not exist."""
        try:
            return [(s.getPath().getName(), bool(s.isDirectory())) for s in self.fs.listStatus(self._p(path))]
        except Py4JJavaError as exc:
            if java_class(exc) == "java.io.FileNotFoundException":
                return []
            raise

    def parent(self, path: str) -> str | None:
        """The qualified parent directory (a relative "out" has one too), None at the root."""
        parent = self.fs.makeQualified(self._p(path)).getParent()
        return None if parent is None else parent.toString()

    def delete(self, path: str) -> bool:
        return bool(self.fs.delete(self._p(path), True))

    def rename(self, src: str, dst: str) -> bool:
        """Hadoop rename: False (not an exception) on most failures. Callers make sure dst does not exist: on
        the local file system a directory renamed onto an existing one lands inside it."""
        try:
            return bool(self.fs.rename(self._p(src), self._p(dst)))
        except Py4JJavaError as exc:  # the local file system's copy fallback raises when src is gone
            if java_class(exc) == "java.io.FileNotFoundException":
                return False
            raise

    def mkdirs(self, path: str) -> None:
        self.fs.mkdirs(self._p(path))

    def write(self, path: str, data: bytes) -> None:
        stream = self.fs.create(self._p(path), True)
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()

    def create_exclusive(self, path: str, data: bytes) -> None:
        """Create `path` with `data`, or raise FileExists if it is there: the lock's one atomic step.

        HDFS (and object stores with conditional writes) make create(overwrite=false) atomic; Hadoop's local
        file system only checks, then creates, so there the file is made with O_CREAT|O_EXCL, which is."""
        if self.scheme == "file":
            local = self.fs.makeQualified(self._p(path)).toUri().getPath()
            self.mkdirs(posixpath.dirname(local))
            try:
                fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                raise FileExists(path) from None
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            return
        try:
            stream = self.fs.create(self._p(path), False)
        except Py4JJavaError as exc:
            if java_class(exc) == "org.apache.hadoop.fs.FileAlreadyExistsException":
                raise FileExists(path) from None
            raise
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()

    def read(self, path: str) -> bytes | None:
        """The whole (small) file, or None when it is not there."""
        try:
            stream = self.fs.open(self._p(path))
        except Py4JJavaError as exc:
            if java_class(exc) == "java.io.FileNotFoundException":
                return None
            raise
        try:
            return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def touch(self, path: str, mtime_ms: int) -> None:
        """Set the modification time (the lock's heartbeat); a no-op on stores without times."""
        self.fs.setTimes(self._p(path), mtime_ms, -1)


def qualified_path(jvm, hadoop_conf, path: str) -> str:
    """`path` qualified by its own file system (see HadoopFS.qualified), symbolic links resolved (HadoopFS.resolved);
    a path whose file system cannot be loaded (a scheme without its connector) is returned as written, so it never
    equals a loadable one."""
    try:
        Path = jvm.org.apache.hadoop.fs.Path
        p = Path(path)
        fs = p.getFileSystem(hadoop_conf)
        qualified = fs.makeQualified(p)
        uri = qualified.toUri()
        scheme, text, local = uri.getScheme(), uri.toString(), uri.getPath()
    except Exception:
        return path
    if scheme == "file":
        # The driver's local file system is Hadoop's: resolve symbolic links (of the existing part) there.
        return "file:" + os.path.realpath(local)
    text = resolve_remote(fs, Path, qualified)
    if text.startswith("file:"):  # a viewfs mount onto the local file system: its links resolved there too
        return qualified_path(jvm, hadoop_conf, text)
    return text.rstrip("/") or text


def resolve_remote(fs, Path, qualified) -> str:
    """A qualified Hadoop path on a file system other than the local one, resolved by FileSystem.resolvePath:
    the nearest existing ancestor's resolution (a symbolic link's target on HDFS, a viewfs mount's target path)
    with the missing rest appended. Unresolved when resolving fails (a permission, a store that cannot): at
    worst two spellings of one place are not recognised as one, as before."""
    missing, p = [], qualified
    try:
        while p is not None:
            try:
                base = fs.resolvePath(p)
                break
            except Py4JJavaError as exc:
                if java_class(exc) != "java.io.FileNotFoundException":
                    raise
                missing.append(p.getName())
                p = p.getParent()
        else:
            return qualified.toString()
    except Exception:
        return qualified.toString()
    for name in reversed(missing):
        base = Path(base, name)
    return base.toString()


def glob_root(path: str) -> str:
    """The part of a path before its first component with a glob character (`*?[{`): everything a glob can
    match lies under it. A path without glob characters is its own root."""
    parts = path.split("/")
    for i, part in enumerate(parts):
        if any(c in part for c in GLOB_CHARS):
            return "/".join(parts[:i]) or "/"
    return path


def relation(a: str, b: str) -> str | None:
    """How qualified path a relates to qualified path b: "equals", "contains" (b lies inside a), "inside"
    (a lies inside b) or None. By whole path components, so /x/crawl.out is not inside /x/crawl."""
    (sa, aa, ca), (sb, ab, cb) = _split(a), _split(b)
    if sa != sb or not same_authority(aa, ab):
        return None
    if ca == cb:
        return "equals"
    if cb[: len(ca)] == ca:
        return "contains"
    if ca[: len(cb)] == cb:
        return "inside"
    return None


_AUTHORITY = re.compile(r"(?P<host>\[[^\]]*\]|[^:]*)(?::(?P<port>\d*))?")


def same_authority(a: str, b: str) -> bool:
    """Whether two authorities (lower case) can name one file system: equal, or one host where one of them
    leaves the port out. Hadoop keeps an authority as written, so hdfs://nn/x and hdfs://nn:8020/x qualify
    differently although they are one place when 8020 is the name node's port (its default), which a path
    cannot tell; for a guard against deleting the input, taking them as one is the safe side (at worst a
    refusal). Other names of one host (an alias, an address) are not recognised."""
    if a == b:
        return True
    ma, mb = _AUTHORITY.fullmatch(a), _AUTHORITY.fullmatch(b)
    if not ma or not mb or ma["host"] != mb["host"]:
        return False
    return not ma["port"] or not mb["port"] or ma["port"] == mb["port"]


def _split(path: str) -> tuple[str, str, list[str]]:
    """(scheme, authority, path components) of a qualified path; not urlsplit, which would cut a local
    path at a `#` or `?`."""
    m = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):(?://([^/]*))?(.*)", path)
    scheme, authority, rest = (m.group(1).lower(), (m.group(2) or "").lower(), m.group(3)) if m else ("", "", path)
    return scheme, authority, [c for c in rest.split("/") if c]
