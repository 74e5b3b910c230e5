//! What the engine hands a format and gets back: the options of a reading, and the units of
//! diagnosis a format replays an input into.

use std::path::Path;

use crate::core::{Format, IngestError, RewindError};
use crate::formats::opencode::db::Schema;
use crate::formats::opencode::request::{self as rebuild, ProviderChoice};
use crate::protocols::stream::protocol::Protocol;
use crate::protocols::stream::{Profile, StreamOptions};
use crate::session::Analysis;
use crate::session::forgetting::Forgetting;
use crate::source::SourceMap;

/// How inputs are read, replayed and rebuilt.
#[derive(Clone, Debug)]
pub struct Options {
    /// Read every input as this kind instead of recognising it (`--input`).
    pub input: Option<Format>,
    /// Processor profiles for stream captures: the first is diagnosed; a second one is replayed
    /// alongside and what it did differently is reported.
    pub profiles: Vec<Profile>,
    /// Force the stream protocol instead of recognising it.
    pub protocol: Option<Protocol>,
    /// Only these sessions of a session store (all when empty).
    pub sessions: Vec<String>,
    /// The OpenCode version whose history reconstruction to follow (default: the store's).
    pub opencode_version: Option<String>,
    /// Which provider rules the rebuilt requests are checked against.
    pub provider: ProviderChoice,
    /// Forget what a large agent log's diagnosis no longer needs, from this many live parts (see
    /// [`crate::formats::agent_log::replay::replay_forgetting`]). `None` keeps the whole model, which the HTML
    /// report, `rewind sessions` and `rewind replay` read.
    pub forget_logs_from: Option<usize>,
    /// The process exits once this input is reported: [`diagnose_file`] leaves its model to the
    /// operating system instead of freeing it piece by piece (on a log of 100,000 records that
    /// is milliseconds of work nobody waits for). Pure data, so nothing is skipped but the
    /// freeing.
    pub exit_after: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            input: None,
            profiles: vec![Profile::OpencodeFixed, Profile::Opencode],
            protocol: None,
            sessions: Vec::new(),
            opencode_version: None,
            provider: ProviderChoice::default(),
            forget_logs_from: None,
            exit_after: false,
        }
    }
}

impl Options {
    /// How a store's sessions are rebuilt: the version given, else the newest version that
    /// created a session in the store, else what the migration journal says (the `migration`
    /// journal came with the core package, after the interrupted-result change).
    pub fn rebuild_options(
        &self,
        store_version: Option<&str>,
        schema: Option<&Schema>,
    ) -> rebuild::Options {
        rebuild::Options::for_store(
            self.opencode_version.as_deref().or(store_version),
            schema,
            self.provider,
        )
    }
}

/// Rebuilds a unit with its rows rendered.
pub type RenderFn<'a> = Box<dyn FnOnce(&mut SourceMap) -> Result<Analysis, RewindError> + 'a>;

/// One unit of diagnosis: one analysis per processor profile for stream captures (the first is
/// the one diagnosed), one analysis otherwise. Units of a database come unrendered (rendering
/// every row would cost more than the rest of the diagnosis); [`Unit::rendered`] renders one when
/// it is worth showing.
pub struct Unit<'a> {
    pub analyses: Vec<Analysis>,
    render: Option<RenderFn<'a>>,
}

impl<'a> Unit<'a> {
    pub fn ready(analysis: Analysis) -> Self {
        Self {
            analyses: vec![analysis],
            render: None,
        }
    }

    /// A store's unit, rendered by `render` when it is worth showing.
    pub fn with_render(analysis: Analysis, render: RenderFn<'a>) -> Self {
        Self {
            analyses: vec![analysis],
            render: Some(render),
        }
    }

    /// A stream's unit: one analysis per profile.
    pub fn profiles(analyses: Vec<Analysis>) -> Self {
        Self {
            analyses,
            render: None,
        }
    }

    /// The analysis that is diagnosed (the first profile's).
    pub fn primary(&self) -> Option<&Analysis> {
        self.analyses.first()
    }

    /// The primary analysis, with its rows rendered as virtual sources when it has rows.
    pub fn rendered(mut self, sources: &mut SourceMap) -> Result<Option<Analysis>, RewindError> {
        match self.render.take() {
            Some(f) => f(sources).map(Some),
            None => Ok((!self.analyses.is_empty()).then(|| self.analyses.swap_remove(0))),
        }
    }

    /// Whether [`Unit::rendered`] renders anything new.
    pub fn renders(&self) -> bool {
        self.render.is_some()
    }

    /// The primary analysis, rendered only when `render` is true.
    pub fn rendered_if(
        mut self,
        render: bool,
        sources: &mut SourceMap,
    ) -> Result<Option<Analysis>, RewindError> {
        if render {
            self.rendered(sources)
        } else {
            Ok((!self.analyses.is_empty()).then(|| self.analyses.swap_remove(0)))
        }
    }
}

/// Receives each unit. The sources a unit adds are forgotten once it has returned.
pub type UnitSink<'a> = dyn FnMut(&mut SourceMap, Unit<'_>) -> Result<(), RewindError> + 'a;

/// One input to read, as the engine hands it to its format's [`Family::analyze`].
///
/// [`Family::analyze`]: crate::formats::Family::analyze
pub struct Input<'a> {
    pub path: &'a Path,
    /// The format recognised (or given with `--input`).
    pub format: Format,
    pub options: &'a Options,
    /// The rules a forgetting replay of an agent log asks what it may forget (the engine's);
    /// without them, an agent log is replayed whole.
    pub forgetting: Option<&'a dyn Fn() -> Box<dyn Forgetting>>,
}

impl Input<'_> {
    /// An error reading this input's records.
    pub fn ingest_err(&self, source: IngestError) -> RewindError {
        RewindError::Ingest {
            path: self.path.to_path_buf(),
            source,
        }
    }

    /// How this input's streams are replayed.
    pub fn stream_options(&self) -> StreamOptions {
        let mut o = StreamOptions::new(self.format, self.options.profiles.clone());
        o.protocol = self.options.protocol;
        o
    }
}
