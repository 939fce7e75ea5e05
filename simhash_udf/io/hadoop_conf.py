"""The Hadoop configuration Spark will load, read on the driver before Spark starts: which file system a plain
path (no scheme) names, so that --input is checked on the right one (job.config)."""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET


def plain_paths_are_local() -> bool:
    """Whether a plain path names a local file. Not under spark-submit (PYSPARK_GATEWAY_PORT: the JVM that
    started this driver decides, and on a cluster Hadoop's fs.defaultFS is usually HDFS), nor when the Hadoop
    configuration that Spark will load (core-site.xml in HADOOP_CONF_DIR or YARN_CONF_DIR) names another
    default file system; the read stage checks such paths on the right file system (a plain `/crawl/D` on an
    HDFS cluster must not be looked for on the driver's disk)."""
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        return False
    for var in ("HADOOP_CONF_DIR", "YARN_CONF_DIR"):
        default_fs = hadoop_default_fs(os.path.join(os.environ.get(var) or "", "core-site.xml"))
        if default_fs and not default_fs.lower().startswith("file:"):
            return False
    return True


def hadoop_default_fs(core_site: str) -> str | None:
    """fs.defaultFS (or the older fs.default.name) of a core-site.xml, None when it has none or is unreadable."""
    try:
        root = ET.parse(core_site).getroot()
    except (OSError, ET.ParseError):
        return None
    for prop in root.iter("property"):
        if (prop.findtext("name") or "").strip() in ("fs.defaultFS", "fs.default.name"):
            return (prop.findtext("value") or "").strip() or None
    return None
