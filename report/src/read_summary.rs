//! Reading `summary.json` for the pictures without holding what they do not show.
//!
//! A `serde_json::Value` takes about ten times the file's size in memory, and most of a large
//! summary is what the pictures never read: each thread's own region tree and every metric
//! besides the wall clock. This reader streams the file and keeps, of the regions merged over
//! threads, the name, count, place, children and the wall clock; of the threads, everything
//! but their region trees. So the pictures are drawn from a summary of any size (a program of
//! 2·10⁵ region names), at the end of a run as well as by `metron report`.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;
use std::io;
use std::path::Path;

/// The wall-clock metric, the one region metric the pictures read.
const WALL: &str = "wall_clock.elapsed";

/// What part of `summary.json` a value is, and so what of it is kept.
#[derive(Clone, Copy)]
enum Part {
    /// Kept whole.
    Any,
    /// The document.
    Top,
    /// `threads`: each kept without its `regions`.
    Threads,
    Thread,
    /// An array of regions (`merged`, a region's `children`).
    Regions,
    Region,
    /// A region's `metrics`: the wall clock only.
    Metrics,
}

impl Part {
    /// The part of the value at `key` of a map of this part; `None`: left out.
    fn field(self, key: &str) -> Option<Part> {
        match (self, key) {
            (Part::Top, "threads") => Some(Part::Threads),
            (Part::Top, "merged") => Some(Part::Regions),
            (Part::Thread, "regions") => None,
            (Part::Region, "children") => Some(Part::Regions),
            (Part::Region, "metrics") => Some(Part::Metrics),
            (Part::Region, "derived" | "module") => None,
            (Part::Metrics, k) if k != WALL => None,
            _ => Some(Part::Any),
        }
    }

    /// The part of each element of an array of this part.
    fn element(self) -> Part {
        match self {
            Part::Threads => Part::Thread,
            Part::Regions => Part::Region,
            _ => Part::Any,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Part {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        match self {
            Part::Any => serde::Deserialize::deserialize(d),
            part => d.deserialize_any(PartVisitor(part)),
        }
    }
}

struct PartVisitor(Part);

impl<'de> Visitor<'de> for PartVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a summary.json value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match self.0.field(&key) {
                Some(part) => {
                    let value = map.next_value_seed(part)?;
                    out.insert(key, value);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self.0.element())? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// `dir/summary.json` as the pictures read it (see the module docs); `None` when the folder
/// has none or it is not JSON.
pub(crate) fn read(dir: &Path) -> Option<Value> {
    let file = std::fs::File::open(dir.join("summary.json")).ok()?;
    let reader = io::BufReader::with_capacity(1 << 20, file);
    let mut de = serde_json::Deserializer::from_reader(reader);
    let value = Part::Top.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_the_pictures_do_not_read_is_left_out() {
        let dir = std::env::temp_dir().join(format!("metron-read-summary-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let region = |children: Value| {
            json!({"name": "step", "count": 2, "file": "a.c", "line": 3, "module": "m",
                   "derived": {"ipc": 1.0},
                   "metrics": {WALL: {"total": 5.0, "self": 5.0}, "cpu.x": {"total": 1.0}},
                   "children": children})
        };
        let summary = json!({
            "exe": "app",
            "merged": [region(json!([region(json!([]))]))],
            "threads": [{"name": "main", "tid": 7, "regions": [region(json!([]))]}],
            "sampling": {"profiles": []},
        });
        std::fs::write(dir.join("summary.json"), summary.to_string()).unwrap();
        let read = read(&dir).unwrap();
        let kept = json!({"name": "step", "count": 2, "file": "a.c", "line": 3,
                          "metrics": {WALL: {"total": 5.0, "self": 5.0}}});
        let mut outer = kept.clone();
        let mut inner = kept;
        inner["children"] = json!([]);
        outer["children"] = json!([inner]);
        assert_eq!(
            read,
            json!({"exe": "app", "merged": [outer], "threads": [{"name": "main", "tid": 7}],
                   "sampling": {"profiles": []}})
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
