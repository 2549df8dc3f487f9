"""Loads a test collection into Milvus (Lite) with pymilvus, for the Milvus retriever's tests.

Reads one JSON object on standard input:
  {"uri": "http://127.0.0.1:PORT", "name": "kb_1", "dim": 8, "metric": "COSINE",
   "index": "AUTOINDEX", "pk": "varchar" | "int64", "extra_vector": false,
   "rows": [{"id": "c000", "vector": [...], "domain": "even", "labels": ["all"]}, ...]}
and prints `loaded N`.
"""
import json
import sys

from pymilvus import DataType, MilvusClient

spec = json.load(sys.stdin)
client = MilvusClient(uri=spec["uri"])
schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
if spec.get("pk", "varchar") == "int64":
    schema.add_field("id", DataType.INT64, is_primary=True)
else:
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
schema.add_field("vector", DataType.FLOAT_VECTOR, dim=spec["dim"])
if spec.get("extra_vector"):
    schema.add_field("other", DataType.FLOAT_VECTOR, dim=spec["dim"])
schema.add_field("domain", DataType.VARCHAR, max_length=64)
schema.add_field("labels", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=8, max_length=32)
index = client.prepare_index_params()
kind = spec.get("index", "AUTOINDEX")
# Milvus 2.3 wants an HNSW index's build parameters; Milvus Lite takes them too.
params = {"M": 16, "efConstruction": 64} if kind == "HNSW" else {}
index.add_index("vector", index_type=kind, metric_type=spec["metric"], params=params)
if spec.get("extra_vector"):
    index.add_index("other", index_type="AUTOINDEX", metric_type=spec["metric"])
client.create_collection(spec["name"], schema=schema, index_params=index, consistency_level="Strong")
rows = spec["rows"]
if spec.get("extra_vector"):
    for r in rows:
        r["other"] = r["vector"]
for i in range(0, len(rows), 500):
    client.insert(spec["name"], rows[i : i + 500])
client.load_collection(spec["name"])
print(f"loaded {len(rows)}")
