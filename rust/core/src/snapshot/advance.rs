//! A newer version of a table built from a snapshot: the commits after it listed (or looked
//! up by name, or learned from the catalog), replayed onto its files and tombstones, or the
//! version loaded afresh when that is the only exact answer or clearly cheaper.
//!
//! Spec: "Action Reconciliation"; catalogManaged RFC ("Reading Catalog-managed Tables",
//! "Publishing Commits").

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray};

use crate::error::DeltaResult;
use crate::log::published::verify_published;
use crate::log::replay::{unseen, Origin, Reconciler};
use crate::log::segment::{build_segment, last_checkpoint_hint, Delta, LogListing, LogSegment};
use crate::model::DomainMetadata;
use crate::nulls::filter_compact;

use super::replay::{parse_in_parallel, replay_deltas};
use super::Snapshot;

/// [`Snapshot::advance`] replays at most this many commits onto a snapshot; a longer range is
/// loaded afresh (from its newest checkpoint).
pub const MAX_INCREMENTAL_COMMITS: u64 = 100;

/// Updates look new commits up by name while the snapshot's segment holds fewer commits than
/// this; a longer segment lists the log instead, to start again from its newest checkpoint.
const PROBE_SEGMENT_DELTAS: usize = 256;

impl Snapshot {
    /// A newer version of the same table (the latest when `target` is `None`), built by
    /// replaying only the commits after this version onto this snapshot's state ("Action
    /// Reconciliation": this snapshot's files and tombstones stand where a checkpoint would):
    /// after a write, this costs the new commits, not a reload of the whole table.
    ///
    /// Falls back to opening `target` afresh ([`Snapshot::try_new`]) when that is the only
    /// exact answer or clearly cheaper: this version's own commit gone or replaced (the table
    /// deleted and created again), an older target, a commit of the range missing (cleaned
    /// up; a newer checkpoint covers it), a `protocol` or `metaData` change in the range (it
    /// may retype statistics), or more than [`MAX_INCREMENTAL_COMMITS`] commits to replay.
    /// The result equals a fresh load, except that tombstones a newer checkpoint dropped as
    /// expired may still be listed.
    pub async fn advance(&self, target: Option<u64>) -> DeltaResult<Snapshot> {
        let current = self.version();
        if target.is_some_and(|t| t < current) {
            return self.reopen(target).await;
        }
        let (listing, latest) = match &self.catalog {
            Some(client) => {
                // The catalog knows the versions the listing does not ("Reading
                // Catalog-managed Tables"): its commits joined with the newer part of the log.
                // Only the commits after this version: those up to it are part of this
                // snapshot already (and a staged one would be read again to be verified).
                let held = client.ratified_commits(Some(current + 1), None).await?;
                let mut listing = self.news(current + 1, None, false).await?;
                held.apply(&self.storage, &mut listing)?;
                // The new published commits as the catalog ratified them (`log::published`).
                let new = listing
                    .files
                    .iter_mut()
                    .filter(|f| f.kind.version().is_some_and(|v| v > current));
                verify_published(&self.storage, &held, Some(client), new.collect()).await?;
                (listing, held.latest_version.max(current))
            }
            None => {
                // From this version on: its own commit is checked too. When that is gone or
                // another file, the table was deleted and created again (or its log cleaned
                // up past this version), and nothing of this snapshot carries over: the
                // target is loaded afresh.
                let listing = if self.segment.last_commit.is_some() {
                    self.news(current, None, true).await?
                } else {
                    LogListing::list(&self.storage, Some(current)).await?
                };
                let commits = listing.commits();
                let loaded_stands = match (&self.segment.last_commit, commits.get(&current)) {
                    (Some(loaded), Some(listed)) => {
                        crate::log::segment::same_object(&loaded.meta, &listed.meta)
                    }
                    (Some(_), None) => false,
                    (None, Some(_)) => true,
                    (None, None) => self.segment.checkpoint.as_ref().is_some_and(|c| {
                        c.parts
                            .iter()
                            .all(|p| listing.files.iter().any(|f| f.name == p.name))
                    }),
                };
                if !loaded_stands {
                    return Self::try_new(self.storage.clone(), target).await;
                }
                let latest = listing.latest_version().map_or(current, |v| v.max(current));
                (listing, latest)
            }
        };
        self.replay_onto(listing, target.unwrap_or(latest), latest)
            .await
    }

    /// [`Snapshot::advance`] to `target`, a version this process knows is published (a
    /// writer's own commit, published with every ratified commit before it): the published
    /// log answers alone ("Publishing Commits": `<v>.json` is the ratified commit `v`, whose
    /// content is immutable), so a catalog-managed table does not ask its catalog again.
    /// Otherwise (a table without a catalog, whose listing is as cheap; a log that does not
    /// hold every commit up to `target` after all, such as a commit the catalog ratifies
    /// later with others) this is `advance(None)`: the latest version.
    pub async fn advance_published(&self, target: u64) -> DeltaResult<Snapshot> {
        let current = self.version();
        if self.catalog.is_none() || target <= current {
            return self.advance(None).await;
        }
        let listing = self.news(current + 1, Some(target), false).await?;
        let commits = listing.commits();
        if (current + 1..=target).any(|v| !commits.contains_key(&v)) {
            return self.advance(None).await;
        }
        drop(commits);
        self.replay_onto(listing, target, target).await
    }

    /// The log from version `from` on (up to `upto`), for an update of this snapshot: on a
    /// local disk the new commits are looked up by name ([`LogListing::probe`]) while this
    /// snapshot's segment is short, so that an update costs what is new, not the size of the
    /// log; otherwise (and to pick up a newer checkpoint once the segment grew) a listing.
    /// With `check_gap`, finding nothing new by name is confirmed with the `_last_checkpoint`
    /// hint: the commits right after this version may be gone (cleaned up behind a newer
    /// checkpoint) while newer ones stand, and a hint past this version means listing.
    async fn news(&self, from: u64, upto: Option<u64>, check_gap: bool) -> DeltaResult<LogListing> {
        if self.segment.deltas.len() < PROBE_SEGMENT_DELTAS {
            if let Some(listing) = LogListing::probe(&self.storage, from, upto).await? {
                let current = self.version();
                if !check_gap
                    || listing.latest_version().is_some_and(|v| v > current)
                    || last_checkpoint_hint(&self.storage)
                        .await
                        .is_none_or(|hint| hint <= current)
                {
                    return Ok(listing);
                }
            }
        }
        LogListing::list(&self.storage, Some(from)).await
    }

    /// `target` (at most `latest`), from this snapshot and the commits after it in
    /// `listing`: [`Snapshot::advance`] once it knows what to replay.
    async fn replay_onto(
        &self,
        listing: LogListing,
        target: u64,
        latest: u64,
    ) -> DeltaResult<Snapshot> {
        let current = self.version();
        let commits = listing.commits();
        if target == current {
            return Ok(self.clone());
        }
        let fresh = || self.reopen(Some(target));
        if target > latest || target - current > MAX_INCREMENTAL_COMMITS {
            return fresh().await;
        }
        let mut deltas = Vec::new();
        for version in current + 1..=target {
            match commits.get(&version) {
                Some(file) => deltas.push(Delta::Commit {
                    version,
                    file: (*file).clone(),
                }),
                None => return fresh().await,
            }
        }
        // The segment of `target`: from a checkpoint newer than this version when the listing
        // has one, else this snapshot's segment followed by the new commits.
        let segment = match build_segment(&listing, Some(target)) {
            Ok(segment) => segment,
            Err(_) => LogSegment {
                version: target,
                checkpoint: self.segment.checkpoint.clone(),
                deltas: self.segment.deltas.iter().chain(&deltas).cloned().collect(),
                last_commit: commits.get(&target).map(|f| (*f).clone()),
            },
        };

        let stats_schema = self.stats_schema.clone();
        let mut reconciler = Reconciler::default();
        let in_commit_timestamp = replay_deltas(
            &self.storage,
            deltas.into_iter().rev().collect(),
            Some(stats_schema.clone()),
            &mut reconciler,
            target,
        )
        .await?;
        if reconciler.protocol.is_some() || reconciler.metadata.is_some() {
            return fresh().await;
        }

        // This snapshot's files and tombstones, less those the new commits referenced.
        let seen = reconciler.take_seen();
        let origin = Origin {
            file: format!("_delta_log/{current:020}.json"),
            version: current,
        };
        let mut files =
            parse_in_parallel(std::mem::take(&mut reconciler.adds), &stats_schema).await?;
        let mut removes = std::mem::take(&mut reconciler.removes);
        for batch in self.files.iter() {
            let mask = unseen(&seen, &batch.adds, "add", &origin)?;
            let kept = mask.iter().filter(|k| **k).count();
            if kept == batch.len() {
                files.push(batch.clone());
            } else if kept > 0 {
                files.push(batch.filter(&BooleanArray::from(mask), kept)?);
            }
        }
        for batch in self.removes.iter() {
            let mask = unseen(&seen, batch, "remove", &origin)?;
            let kept = mask.iter().filter(|k| **k).count();
            if kept == batch.len() {
                removes.push(batch.clone());
            } else if kept > 0 {
                let array: arrow::array::ArrayRef = Arc::new(batch.clone());
                let filtered = filter_compact(&array, &BooleanArray::from(mask), kept)?;
                removes.push(filtered.as_struct().clone());
            }
        }

        let mut txns = self.txns.clone();
        txns.extend(reconciler.txns.drain());
        let mut domains: BTreeMap<String, DomainMetadata> = self
            .domains
            .iter()
            .map(|d| (d.domain.clone(), d.clone()))
            .collect();
        for (domain, update) in reconciler.domain_updates() {
            match update {
                Some(d) => domains.insert(domain.clone(), d.clone()),
                None => domains.remove(domain),
            };
        }
        Ok(Snapshot {
            storage: self.storage.clone(),
            segment: Arc::new(segment),
            protocol: self.protocol.clone(),
            metadata: self.metadata.clone(),
            txns,
            domains: domains.into_values().collect(),
            files: Arc::new(crate::snapshot::files::coalesce(files)),
            removes: Arc::new(removes),
            stats_schema,
            in_commit_timestamp,
            catalog: self.catalog.clone(),
        })
    }
}
