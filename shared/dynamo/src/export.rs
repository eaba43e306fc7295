//! The ledger as an export file: one item per line in DynamoDB's export shape
//! (`DYNAMODB_JSON`: `{"Item": {"pk": {"S": "…"}, …}}`), each partition key's items together,
//! as `local export` writes it from a scan. Reconciliation reads it with the same fold as the
//! table: a copy taken off the live table, checked anywhere, at any size, in bounded memory.
//! [`ReportDirectory`] is where reports go locally.
//!
//! An export DynamoDB itself writes to S3 does not keep a collection's items together; read one
//! after sorting its lines by partition key (the fold reports a collection met in pieces).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::{item_keys, ledger_item, CollectionFeed, RawItem};
use red_packets_core::domain::books::{BooksFold, LedgerItem, MovementRecord, Reread};
use red_packets_core::domain::{BusinessDay, Currency, UserId};
use red_packets_core::ports::{Books, ReportSink, StoreError};

#[derive(Serialize, Deserialize)]
struct Line {
    #[serde(rename = "Item")]
    item: RawItem,
}

/// An export file read as the books.
#[derive(Debug, Clone)]
pub struct ExportFile {
    path: PathBuf,
    currency: Currency,
}

impl ExportFile {
    /// The export at `path`, of a ledger in `currency` (an export's items carry bare amounts).
    pub fn new(path: impl Into<PathBuf>, currency: Currency) -> Self {
        ExportFile { path: path.into(), currency }
    }
}

/// Writes items to an export file, one line each.
pub struct ExportWriter {
    out: BufWriter<File>,
}

impl ExportWriter {
    /// Creates (or truncates) the file at `path`.
    pub fn create(path: impl Into<PathBuf>) -> std::io::Result<Self> {
        Ok(ExportWriter { out: BufWriter::with_capacity(1 << 20, File::create(path.into())?) })
    }

    /// Writes one item.
    pub fn write(&mut self, item: RawItem) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, &Line { item })?;
        self.out.write_all(b"\n")
    }

    /// Flushes what is buffered.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

fn unreadable(error: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("export file: {error}"))
}

impl Books for ExportFile {
    /// An export is reconciled as of cut-offs, never by day: UTC.
    fn business_day(&self) -> BusinessDay {
        BusinessDay::default()
    }

    fn currency(&self) -> Currency {
        self.currency
    }

    /// Reads the file line by line (blocking reads: for tools, not request handlers).
    async fn read_into(&self, fold: &mut BooksFold) -> Result<(), StoreError> {
        let file = File::open(&self.path).map_err(unreadable)?;
        let mut feed = CollectionFeed::default();
        for (number, line) in BufReader::with_capacity(1 << 20, file).lines().enumerate() {
            let line = line.map_err(unreadable)?;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Line>(&line) {
                Ok(Line { item }) => feed.push(fold, item),
                Err(error) => fold.unreadable("line", &(number + 1).to_string(), &error.to_string()),
            }
        }
        feed.flush(fold);
        Ok(())
    }

    /// A file is a copy: a wallet cannot be read again, so one that looked off is reported.
    async fn wallet_exact(&self, _user: &UserId) -> Result<Reread, StoreError> {
        Ok(Reread::Impossible)
    }

    /// Reads the whole file for one wallet's lines.
    async fn movements_of(&self, user: &UserId) -> Result<Vec<MovementRecord>, StoreError> {
        let file = File::open(&self.path).map_err(unreadable)?;
        let pk = crate::wallet_key(user);
        let mut movements = Vec::new();
        for line in BufReader::new(file).lines() {
            let line = line.map_err(unreadable)?;
            if !line.contains(&pk) {
                continue;
            }
            let Ok(Line { item }) = serde_json::from_str::<Line>(&line) else { continue };
            if item_keys(&item).0 == pk {
                if let Ok(Some(LedgerItem::Movement(movement))) = ledger_item(item) {
                    movements.push(movement);
                }
            }
        }
        Ok(movements)
    }
}

/// Reports written to a directory (`make statement`, `make trial-balance`), each file created
/// once and never rewritten, as the reports bucket's Object Lock keeps them.
#[derive(Debug, Clone)]
pub struct ReportDirectory {
    root: PathBuf,
}

impl ReportDirectory {
    /// Reports under `root`, created as needed.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ReportDirectory { root: root.into() }
    }
}

impl ReportSink for ReportDirectory {
    async fn put(&self, key: &str, body: String) -> Result<String, StoreError> {
        let path = self.root.join(key);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(unreadable)?;
        }
        let location = path.display().to_string();
        // Written whole beside it first, then linked into place: the link fails where a report
        // is, and a report is never seen half written.
        let draft = path.with_extension(format!("draft-{}", red_packets_core::domain::PacketId::random()));
        std::fs::write(&draft, body).map_err(unreadable)?;
        let filed = std::fs::hard_link(&draft, &path);
        std::fs::remove_file(&draft).map_err(unreadable)?;
        match filed {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                tracing::info!(%location, "a report is filed there already: kept, not rewritten");
            }
            Err(error) => return Err(unreadable(error)),
        }
        Ok(location)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report filed in a directory is never rewritten: the second put of the same key keeps
    /// the first body and answers its location.
    #[tokio::test]
    async fn a_report_filed_in_a_directory_is_never_rewritten() {
        let root = std::env::temp_dir().join(format!("write-once-{}", red_packets_core::domain::PacketId::random()));
        let reports = ReportDirectory::new(&root);
        let first = reports.put("statements/2026-11-23/alice.csv", "first".into()).await.unwrap();
        let again = reports.put("statements/2026-11-23/alice.csv", "second".into()).await.unwrap();
        assert_eq!(first, again);
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "first");
        std::fs::remove_dir_all(root).unwrap();
    }
}
