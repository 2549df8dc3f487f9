//! The few protobuf encodings Milvus' messages need, written by hand: varints, 64- and
//! 32-bit numbers and length-delimited fields (strings, bytes, nested messages, packed
//! repeated numbers). The field numbers are those of Milvus' published `milvus.proto`,
//! `common.proto` and `schema.proto` (named at each use in `milvus.rs`).

/// A message being written.
#[derive(Debug, Default, Clone)]
pub(crate) struct Writer {
    buf: Vec<u8>,
}

fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

impl Writer {
    pub(crate) fn new() -> Writer {
        Writer::default()
    }

    fn key(&mut self, field: u32, wire: u8) {
        varint(&mut self.buf, (u64::from(field) << 3) | u64::from(wire));
    }

    /// A varint field (`int64`, `bool`, an enum); zero is written too (proto3 readers take
    /// an absent field as zero, so this changes nothing they read).
    pub(crate) fn uint(&mut self, field: u32, v: u64) -> &mut Writer {
        self.key(field, 0);
        varint(&mut self.buf, v);
        self
    }

    /// A length-delimited field: a string, bytes or a nested message.
    pub(crate) fn bytes(&mut self, field: u32, v: &[u8]) -> &mut Writer {
        self.key(field, 2);
        varint(&mut self.buf, v.len() as u64);
        self.buf.extend_from_slice(v);
        self
    }

    pub(crate) fn string(&mut self, field: u32, v: &str) -> &mut Writer {
        self.bytes(field, v.as_bytes())
    }

    pub(crate) fn message(&mut self, field: u32, m: &Writer) -> &mut Writer {
        self.bytes(field, &m.buf)
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// One field of a message being read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

impl<'a> Value<'a> {
    pub(crate) fn as_u64(self) -> Option<u64> {
        match self {
            Value::Varint(v) | Value::Fixed64(v) => Some(v),
            Value::Fixed32(v) => Some(u64::from(v)),
            Value::Bytes(_) => None,
        }
    }

    pub(crate) fn as_bytes(self) -> Option<&'a [u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> Option<&'a str> {
        self.as_bytes().and_then(|b| std::str::from_utf8(b).ok())
    }
}

/// The fields of a message, in the order written; an error says where the bytes break.
pub(crate) fn fields(mut buf: &[u8]) -> Result<Vec<(u32, Value<'_>)>, String> {
    fn read_varint(buf: &mut &[u8]) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = buf
                .split_first()
                .ok_or_else(|| "a varint runs past the message's end".to_owned())?;
            *buf = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err("a varint longer than 10 bytes".to_owned())
    }
    fn take<'a>(buf: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
        if buf.len() < n {
            return Err(format!(
                "a field of {n} bytes runs past the message's end ({} left)",
                buf.len()
            ));
        }
        let (head, rest) = buf.split_at(n);
        *buf = rest;
        Ok(head)
    }
    let mut out = Vec::new();
    while !buf.is_empty() {
        let key = read_varint(&mut buf)?;
        let field = u32::try_from(key >> 3).map_err(|_| "a field number beyond 32 bits")?;
        let value = match key & 7 {
            0 => Value::Varint(read_varint(&mut buf)?),
            1 => Value::Fixed64(u64::from_le_bytes(
                take(&mut buf, 8)?.try_into().unwrap_or_default(),
            )),
            2 => {
                let n = usize::try_from(read_varint(&mut buf)?)
                    .map_err(|_| "a length beyond memory")?;
                Value::Bytes(take(&mut buf, n)?)
            }
            5 => Value::Fixed32(u32::from_le_bytes(
                take(&mut buf, 4)?.try_into().unwrap_or_default(),
            )),
            other => return Err(format!("wire type {other} (groups are not read)")),
        };
        out.push((field, value));
    }
    Ok(out)
}

/// The last value of `field` (proto3: the last one wins), if any.
pub(crate) fn field<'a>(fields: &[(u32, Value<'a>)], number: u32) -> Option<Value<'a>> {
    fields
        .iter()
        .rev()
        .find(|(n, _)| *n == number)
        .map(|(_, v)| *v)
}

/// Every value of a repeated `field`, in order.
pub(crate) fn repeated<'a, 'f>(
    fields: &'f [(u32, Value<'a>)],
    number: u32,
) -> impl Iterator<Item = Value<'a>> + 'f {
    fields
        .iter()
        .filter(move |(n, _)| *n == number)
        .map(|(_, v)| *v)
}

/// A repeated `int64` field, packed (one length-delimited run) or not.
pub(crate) fn int64s(fields: &[(u32, Value<'_>)], number: u32) -> Result<Vec<i64>, String> {
    let mut out = Vec::new();
    for v in repeated(fields, number) {
        match v {
            Value::Varint(x) => out.push(x as i64),
            Value::Bytes(mut b) => {
                while !b.is_empty() {
                    let mut x = 0u64;
                    let mut shift = 0;
                    loop {
                        let (&byte, rest) = b
                            .split_first()
                            .ok_or_else(|| "a packed varint runs past its field".to_owned())?;
                        b = rest;
                        x |= u64::from(byte & 0x7f) << shift;
                        shift += 7;
                        if byte < 0x80 || shift >= 64 {
                            break;
                        }
                    }
                    out.push(x as i64);
                }
            }
            _ => return Err(format!("field {number}: not an int64")),
        }
    }
    Ok(out)
}

/// A repeated `float` field, packed or not.
pub(crate) fn floats(fields: &[(u32, Value<'_>)], number: u32) -> Result<Vec<f32>, String> {
    let mut out = Vec::new();
    for v in repeated(fields, number) {
        match v {
            Value::Fixed32(x) => out.push(f32::from_bits(x)),
            Value::Bytes(b) if b.len() % 4 == 0 => out.extend(
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            ),
            _ => return Err(format!("field {number}: not a float")),
        }
    }
    Ok(out)
}

/// The nested message at `field`, parsed (an absent field is an empty message).
pub(crate) fn nested<'a>(
    fields: &[(u32, Value<'a>)],
    number: u32,
) -> Result<Vec<(u32, Value<'a>)>, String> {
    match field(fields, number) {
        None => Ok(Vec::new()),
        Some(Value::Bytes(b)) => self::fields(b),
        Some(_) => Err(format!("field {number}: not a message")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_fields_read_back() {
        let mut inner = Writer::new();
        inner.string(1, "dim").string(2, "384");
        let mut w = Writer::new();
        w.uint(1, 300).message(6, &inner).string(3, "kb");
        let bytes = w.into_bytes();
        // 300 = 0xac 0x02 as a varint
        assert_eq!(&bytes[..3], &[0x08, 0xac, 0x02]);
        let f = fields(&bytes).unwrap();
        assert_eq!(field(&f, 1).and_then(Value::as_u64), Some(300));
        assert_eq!(field(&f, 3).and_then(Value::as_str), Some("kb"));
        let kv = nested(&f, 6).unwrap();
        assert_eq!(field(&kv, 2).and_then(Value::as_str), Some("384"));
    }

    #[test]
    fn packed_and_unpacked_repeated_numbers() {
        // field 1 packed int64 [1, 150, -1]; field 4 packed floats [0.5, -2]
        let mut w = Writer::new();
        let mut packed = Vec::new();
        for v in [1u64, 150, u64::MAX] {
            varint(&mut packed, v);
        }
        w.bytes(1, &packed);
        w.uint(1, 7);
        let floats_le: Vec<u8> = [0.5f32, -2.0]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        w.bytes(4, &floats_le);
        let bytes = w.into_bytes();
        let f = fields(&bytes).unwrap();
        assert_eq!(int64s(&f, 1).unwrap(), vec![1, 150, -1, 7]);
        assert_eq!(floats(&f, 4).unwrap(), vec![0.5, -2.0]);
    }

    #[test]
    fn truncated_messages_are_errors_not_panics() {
        assert!(fields(&[0x0a, 0x05, b'a']).is_err());
        assert!(fields(&[0x08, 0xff]).is_err());
        assert!(fields(&[0x0b]).is_err());
    }
}
