//! Absence is a claim: before a rule says that something never happened (a tool's result, a
//! step's finish), it asks whether a record the replay could not read may hold it.
//!
//! A record read leniently (a wrapper's mangled escapes made harmless) is in the model already;
//! one that could not be read at all (a cut line) may hold what it names, of the kind it names:
//! a record that names other ids, or is of another kind, does not; one whose text names no id or
//! no kind may hold anything. Only an agent log's records are read so (`Analysis::salvaged`).

use crate::FastMap;
use crate::session::{Analysis, Salvage, Undecodable};
use crate::source::{FileId, Span};

/// The records of a unit that could not be read and may be of the kinds a rule misses, indexed
/// once: by the ids they name, and those that name none.
pub struct Unread<'a> {
    /// By id: the records naming it, in file order.
    by_id: FastMap<&'a str, Vec<&'a Undecodable>>,
    /// The records that name no id, in file order.
    unnamed: Vec<&'a Undecodable>,
}

/// What may hold the missing piece: the first such record, and whether it names one of the ids.
pub struct MayHold<'a> {
    pub record: &'a Undecodable,
    pub named: bool,
    /// How many unread records after the point may hold it.
    pub count: usize,
}

impl<'a> Unread<'a> {
    /// The unread records of `analysis` that may be of one of `kinds` (the `type` of a record
    /// that would hold what is missing): those that name one, and those that name none.
    pub fn new(analysis: &'a Analysis, kinds: &[&str]) -> Self {
        let salvaged: FastMap<(FileId, u64), &Salvage> = (analysis.salvaged.iter())
            .map(|s| ((s.span.file, s.span.offset), s))
            .collect();
        let mut by_id: FastMap<&str, Vec<&Undecodable>> = FastMap::default();
        let mut unnamed = Vec::new();
        for u in &analysis.undecodable {
            // Only a record a lenient reading looked at says what it may hold (an agent log's);
            // the others are left as their rules see them.
            let Some(salvage) = salvaged.get(&(u.span.file, u.span.offset)) else {
                continue;
            };
            let kind_fits = salvage.kinds.is_empty()
                || (salvage.kinds.iter()).any(|k| kinds.contains(&k.as_str()));
            if salvage.recovered || !kind_fits {
                continue;
            }
            if salvage.mentions.is_empty() {
                unnamed.push(u);
            }
            for id in &salvage.mentions {
                by_id.entry(id.as_str()).or_default().push(u);
            }
        }
        for records in by_id.values_mut() {
            records.sort_by_key(|u| (u.span.file, u.span.offset));
        }
        unnamed.sort_by_key(|u| (u.span.file, u.span.offset));
        Unread { by_id, unnamed }
    }

    /// The unread records after `after` (in its file) that may hold what is missing about
    /// `ids`: those that name one of them, else those that name nothing.
    pub fn may_hold(&self, after: Span, ids: &[&str]) -> Option<MayHold<'a>> {
        fn later<'r, 'u>(records: &'r [&'u Undecodable], after: Span) -> &'r [&'u Undecodable] {
            let key = (after.file, after.offset);
            let from = records.partition_point(|u| (u.span.file, u.span.offset) <= key);
            let to = records.partition_point(|u| u.span.file <= after.file);
            records.get(from..to.max(from)).unwrap_or_default()
        }
        let mut named: Vec<&'a Undecodable> = ids
            .iter()
            .filter(|id| !id.is_empty())
            .filter_map(|id| self.by_id.get(id))
            .flat_map(|records| later(records, after).iter().copied())
            .collect();
        named.sort_by_key(|u| u.span.offset);
        named.dedup_by_key(|u| u.span.offset);
        if let Some(first) = named.first() {
            return Some(MayHold {
                record: first,
                named: true,
                count: named.len(),
            });
        }
        let unnamed = later(&self.unnamed, after);
        unnamed.first().map(|first| MayHold {
            record: first,
            named: false,
            count: unnamed.len(),
        })
    }
}

impl MayHold<'_> {
    /// The words a finding adds: why what it says is missing may not be.
    pub fn words(&self, what: &str) -> String {
        let s = if self.count == 1 { "" } else { "s" };
        if self.named {
            format!(
                "{} record{s} after it could not be decoded and name{} it: {what} may be there",
                self.count,
                if self.count == 1 { "s" } else { "" }
            )
        } else {
            format!(
                "{} record{s} after it could not be decoded: {what} may be there",
                self.count
            )
        }
    }
}
