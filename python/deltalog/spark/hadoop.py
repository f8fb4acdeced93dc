"""A table's object store as Hadoop names it, for Spark's file sources (issue #45, item 2).

deltalog opens stores with ``object_store`` (``storage_options``: its keys, case-insensitive,
with or without the ``aws_`` prefix); Spark's parquet reader opens the same files through
Hadoop's file systems, configured by Hadoop keys. :func:`hadoop_options` turns a table's
``storage_options`` into Hadoop settings scoped to the table's bucket
(``fs.s3a.bucket.<bucket>.*``), which the JVM companion puts on the scan's relation: Spark
merges a relation's options into the Hadoop configuration of that scan only, never the
session's. Without ``storage_options`` nothing is added and Hadoop's own configuration
(the session's ``spark.hadoop.*`` settings, instance profiles, environment variables)
applies, as for any Spark read.

``s3://`` (object_store's scheme) is S3A's ``s3a://``; the companion maps it. Google Cloud
Storage (``gs://``) and Azure (``abfss://``) tables are read with the session's Hadoop
configuration; their ``storage_options`` are not translated (yet).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlparse

#: object_store's S3 option names (lowercase, without ``aws_``) → what they set.
_S3_KEYS = {
    "access_key_id": "access",
    "secret_access_key": "secret",
    "session_token": "token",
    "token": "token",
    "region": "region",
    "default_region": "region",
    "endpoint": "endpoint",
    "endpoint_url": "endpoint",
    "allow_http": "allow_http",
    "virtual_hosted_style_request": "virtual_hosted",
}


def _s3_settings(options: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in options.items():
        name = key.lower()
        name = name.removeprefix("aws_")
        what = _S3_KEYS.get(name)
        if what is not None:
            out[what] = str(value)
    return out


def hadoop_options(uri: str, storage_options: Mapping[str, str] | None) -> dict[str, str]:
    """Hadoop settings reading the table at ``uri`` with its ``storage_options``."""
    if not storage_options:
        return {}
    parsed = urlparse(uri)
    if parsed.scheme not in ("s3", "s3a", "s3n") or not parsed.netloc:
        return {}
    s3 = _s3_settings(storage_options)
    prefix = f"fs.s3a.bucket.{parsed.netloc}."
    out: dict[str, str] = {}
    if "access" in s3 and "secret" in s3:
        out[prefix + "access.key"] = s3["access"]
        out[prefix + "secret.key"] = s3["secret"]
        if "token" in s3:
            out[prefix + "session.token"] = s3["token"]
            provider = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
        else:
            provider = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
        out[prefix + "aws.credentials.provider"] = provider
    if "region" in s3:
        out[prefix + "endpoint.region"] = s3["region"]
    if "endpoint" in s3:
        endpoint = s3["endpoint"]
        out[prefix + "endpoint"] = endpoint
        if endpoint.lower().startswith("http://"):
            out[prefix + "connection.ssl.enabled"] = "false"
        # object_store addresses a custom endpoint by path unless told otherwise.
        virtual = s3.get("virtual_hosted", "false").lower() == "true"
        out[prefix + "path.style.access"] = "false" if virtual else "true"
    return out


__all__ = ["hadoop_options"]
