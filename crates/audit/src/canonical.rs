//! The canonical encoding: JSON with object keys sorted by their bytes, no
//! whitespace, strings escaped as `serde_json` escapes them. One value has
//! one encoding whatever the order its fields were written in, so a hash
//! over it is stable across releases and across the two stores (and does
//! not depend on whether some crate in the build turns on serde_json's
//! `preserve_order`).

use serde_json::Value;

/// `value`'s canonical encoding.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(key, out);
                out.push(':');
                write(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::String(s) => write_str(s, out),
        // Null, booleans and numbers have one serde_json form each.
        other => out.push_str(&other.to_string()),
    }
}

fn write_str(s: &str, out: &mut String) {
    out.push_str(&Value::String(s.to_owned()).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sorted_at_every_depth_and_nothing_else_moves() {
        let v: Value = serde_json::from_str(r#"{"b": 1, "a": {"d": [3, {"z": null, "y": true}], "c": "x\"y"}}"#).unwrap();
        assert_eq!(to_string(&v), r#"{"a":{"c":"x\"y","d":[3,{"y":true,"z":null}]},"b":1}"#);
    }

    #[test]
    fn the_encoding_reads_back_as_the_same_value() {
        let v: Value = serde_json::from_str(r#"{"é": "\u0001\n", "n": -12, "f": 1.5}"#).unwrap();
        let back: Value = serde_json::from_str(&to_string(&v)).unwrap();
        assert_eq!(back, v);
    }
}
