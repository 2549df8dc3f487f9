//! The Milvus messages this adapter sends and reads, as prost derive structs written from
//! Milvus' published `milvus.proto`, `common.proto` and `schema.proto` (package
//! `milvus.proto.*`): only the fields used, with their field numbers; prost skips the
//! others when reading. A `oneof` is written as its members, each an optional field (the
//! same bytes on the wire).

/// `common.Status`: `error_code` is the legacy enum, `code` the newer number.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Status {
    #[prost(int32, tag = "1")]
    pub error_code: i32,
    #[prost(string, tag = "2")]
    pub reason: String,
    #[prost(int32, tag = "3")]
    pub code: i32,
}

/// `common.KeyValuePair`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct KeyValuePair {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

impl KeyValuePair {
    pub(crate) fn new(key: &str, value: &str) -> KeyValuePair {
        KeyValuePair {
            key: key.to_owned(),
            value: value.to_owned(),
        }
    }
}

/// `milvus.DescribeCollectionRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct DescribeCollectionRequest {
    #[prost(string, tag = "2")]
    pub db_name: String,
    #[prost(string, tag = "3")]
    pub collection_name: String,
}

/// `milvus.DescribeCollectionResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct DescribeCollectionResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, optional, tag = "2")]
    pub schema: Option<CollectionSchema>,
}

/// `schema.CollectionSchema`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct CollectionSchema {
    #[prost(message, repeated, tag = "4")]
    pub fields: Vec<FieldSchema>,
}

/// `schema.FieldSchema`; `data_type` is `schema.DataType`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct FieldSchema {
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(bool, tag = "3")]
    pub is_primary_key: bool,
    #[prost(int32, tag = "5")]
    pub data_type: i32,
    #[prost(message, repeated, tag = "6")]
    pub type_params: Vec<KeyValuePair>,
}

/// `milvus.DescribeIndexRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct DescribeIndexRequest {
    #[prost(string, tag = "2")]
    pub db_name: String,
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(string, tag = "4")]
    pub field_name: String,
}

/// `milvus.DescribeIndexResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct DescribeIndexResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, repeated, tag = "2")]
    pub index_descriptions: Vec<IndexDescription>,
}

/// `milvus.IndexDescription`: `params` holds `metric_type` and `index_type`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct IndexDescription {
    #[prost(message, repeated, tag = "3")]
    pub params: Vec<KeyValuePair>,
    #[prost(string, tag = "4")]
    pub field_name: String,
}

/// `milvus.QueryRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct QueryRequest {
    #[prost(string, tag = "2")]
    pub db_name: String,
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(string, tag = "4")]
    pub expr: String,
    #[prost(string, repeated, tag = "5")]
    pub output_fields: Vec<String>,
    #[prost(bool, tag = "12")]
    pub use_default_consistency: bool,
}

/// `milvus.QueryResults`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct QueryResults {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, repeated, tag = "2")]
    pub fields_data: Vec<FieldData>,
}

/// `schema.FieldData` (its `field` oneof: `scalars` = 3, `vectors` = 4).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct FieldData {
    #[prost(string, tag = "2")]
    pub field_name: String,
    #[prost(message, optional, tag = "3")]
    pub scalars: Option<ScalarField>,
    #[prost(message, optional, tag = "4")]
    pub vectors: Option<VectorField>,
}

/// `schema.ScalarField` (its `data` oneof: the two members read).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ScalarField {
    #[prost(message, optional, tag = "3")]
    pub long_data: Option<LongArray>,
    #[prost(message, optional, tag = "6")]
    pub string_data: Option<StringArray>,
}

/// `schema.VectorField` (its `data` oneof: `float_vector` = 2).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct VectorField {
    #[prost(int64, tag = "1")]
    pub dim: i64,
    #[prost(message, optional, tag = "2")]
    pub float_vector: Option<FloatArray>,
}

/// `schema.LongArray`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct LongArray {
    #[prost(int64, repeated, tag = "1")]
    pub data: Vec<i64>,
}

/// `schema.StringArray`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct StringArray {
    #[prost(string, repeated, tag = "1")]
    pub data: Vec<String>,
}

/// `schema.FloatArray`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct FloatArray {
    #[prost(float, repeated, tag = "1")]
    pub data: Vec<f32>,
}

/// `milvus.SearchRequest`: `placeholder_group` is an encoded [`PlaceholderGroup`],
/// `dsl_type` `common.DslType` (`BoolExprV1` = 1).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SearchRequest {
    #[prost(string, tag = "2")]
    pub db_name: String,
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(string, tag = "5")]
    pub dsl: String,
    #[prost(bytes = "vec", tag = "6")]
    pub placeholder_group: Vec<u8>,
    #[prost(int32, tag = "7")]
    pub dsl_type: i32,
    #[prost(message, repeated, tag = "9")]
    pub search_params: Vec<KeyValuePair>,
    #[prost(int64, tag = "12")]
    pub nq: i64,
    #[prost(bool, tag = "15")]
    pub use_default_consistency: bool,
}

/// `common.PlaceholderGroup`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct PlaceholderGroup {
    #[prost(message, repeated, tag = "1")]
    pub placeholders: Vec<PlaceholderValue>,
}

/// `common.PlaceholderValue`: `type` is `common.PlaceholderType` (`FloatVector` = 101),
/// each value one query's floats, little-endian.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct PlaceholderValue {
    #[prost(string, tag = "1")]
    pub tag: String,
    #[prost(int32, tag = "2")]
    pub r#type: i32,
    #[prost(bytes = "vec", repeated, tag = "3")]
    pub values: Vec<Vec<u8>>,
}

/// `milvus.SearchResults`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SearchResults {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, optional, tag = "2")]
    pub results: Option<SearchResultData>,
}

/// `schema.SearchResultData`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SearchResultData {
    #[prost(float, repeated, tag = "4")]
    pub scores: Vec<f32>,
    #[prost(message, optional, tag = "5")]
    pub ids: Option<Ids>,
}

/// `schema.IDs` (its `id_field` oneof: `int_id` = 1, `str_id` = 2).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Ids {
    #[prost(message, optional, tag = "1")]
    pub int_id: Option<LongArray>,
    #[prost(message, optional, tag = "2")]
    pub str_id: Option<StringArray>,
}

/// The answers' common shape: a status first.
pub(crate) trait Answer {
    fn status(&self) -> Option<&Status>;
}

macro_rules! answer {
    ($($t:ty),*) => {$(
        impl Answer for $t {
            fn status(&self) -> Option<&Status> {
                self.status.as_ref()
            }
        }
    )*};
}
answer!(
    DescribeCollectionResponse,
    DescribeIndexResponse,
    QueryResults,
    SearchResults
);

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn field_numbers_are_the_published_ones() {
        // QueryRequest: collection_name = 3, expr = 4, output_fields = 5,
        // use_default_consistency = 12
        let q = QueryRequest {
            db_name: String::new(),
            collection_name: "kb".into(),
            expr: "id in [1]".into(),
            output_fields: vec!["id".into()],
            use_default_consistency: true,
        };
        let bytes = q.encode_to_vec();
        assert_eq!(&bytes[..4], &[0x1a, 2, b'k', b'b']);
        assert_eq!(bytes[4], 0x22);
        assert_eq!(&bytes[bytes.len() - 2..], &[0x60, 1]);
        // SearchResultData: scores = 4 (packed floats), ids = 5 with int_id = 1
        let mut answer = vec![0x22, 8];
        answer.extend(0.5f32.to_le_bytes());
        answer.extend((-2.0f32).to_le_bytes());
        answer.extend([0x2a, 4, 0x0a, 2, 0x08, 7]);
        let d = SearchResultData::decode(answer.as_slice()).unwrap();
        assert_eq!(d.scores, [0.5, -2.0]);
        assert_eq!(d.ids.unwrap().int_id.unwrap().data, [7]);
    }

    #[test]
    fn truncated_messages_are_errors_not_panics() {
        assert!(Status::decode(&[0x12, 0x05, b'a'][..]).is_err());
        assert!(Status::decode(&[0x08, 0xff][..]).is_err());
        assert!(LongArray::decode(&[0x0b][..]).is_err());
    }
}
