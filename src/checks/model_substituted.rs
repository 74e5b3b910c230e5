use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::session::{Analysis, EventKind};
use crate::source::Span;

declare_check! {
    /// ## What it does
    /// Reports a run in which the model the agent resolved and called is not the one the user
    /// asked for: the agent's command line says `--model kilo/glm-5-free`, and the agent logs that
    /// it uses `opencode/kimi-k2.5-free`. A short name the agent expands (`kimi-k2.5-free` →
    /// `opencode/kimi-k2.5-free`), a dated or `-preview`/`-latest` variant of the same model, the
    /// provider's own name for it in a step's `respondedModelID`, and a small model the agent uses
    /// for titles and summaries are not substitutions. The request is the agent's own command
    /// line, or, when its log has none, the wrapper's (`solve … --model kilo/glm-5-free`); the
    /// model that ran is the one the agent logs it resolved, or the default it fell back to when
    /// it could not initialise the model asked for (`Failed to initialize specified model,
    /// falling back to default model`, then `using opencode provider as default`).
    ///
    /// ## Why it matters
    /// A run judged on a model it never used misleads everyone: its quality, cost and failures
    /// belong to another model, and a provider or model the user chose on purpose (a free tier, a
    /// data-residency choice) was silently replaced.
    ///
    /// ## Example
    /// ```text
    /// "command": "… agent --model kilo/glm-5-free --verbose",
    /// "rawModel": "opencode/kimi-k2.5-free", "providerID": "opencode", "modelID": "kimi-k2.5-free",
    /// "message": "using explicit provider/model"
    /// ```
    ///
    /// ## How to fix
    /// Fail when the requested provider or model cannot be resolved instead of falling back, or
    /// say loudly which model replaced it; check that the provider is configured and that the
    /// model name is one it lists.
    pub struct ModelSubstituted {
        name: "model-substituted",
        severity: Warning,
        summary: "The model the agent ran is not the one the user asked for",
    }
}

impl Check for ModelSubstituted {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        stored(analysis, out);
        // The model the agent's own command line asked for in this run, and the one the last
        // wrapper command line asked for (which a run of the agent does not reset): the agent's
        // is the request when it has one.
        let mut requested: Option<(&str, Span)> = None;
        let mut by_wrapper: Option<(&str, Span)> = None;
        let mut reported = false;
        for e in &analysis.events {
            match &e.kind {
                EventKind::RunStart => {
                    requested = None;
                    reported = false;
                }
                EventKind::ModelRequested { spec, by_wrapper: w } => {
                    let slot = if *w { &mut by_wrapper } else { &mut requested };
                    *slot = Some((spec.as_str(), e.span));
                    reported = false;
                }
                EventKind::ModelResolved(resolved) => {
                    let crate::session::ResolvedModel {
                        raw,
                        provider,
                        model,
                        span,
                        fallback_from,
                    } = &**resolved;
                    let Some((spec, asked_at)) = requested.or(by_wrapper) else {
                        continue;
                    };
                    if reported || same_model(spec, provider, model) {
                        continue;
                    }
                    reported = true;
                    let on_wrapper = requested.is_none();
                    let session = analysis
                        .events_after(e.seq)
                        .find_map(|x| x.session.clone())
                        .or_else(|| e.session.clone());
                    let mut f = Self::META
                        .finding(format!(
                            "the user asked for `{spec}`, but the agent resolved and called `{raw}`"
                        ))
                        .at(
                            span.unwrap_or(e.span.head()),
                            format!("the agent resolved `{raw}`"),
                        )
                        .also(Some(asked_at), format!("the user asked for `{spec}`"))
                        .ids(Ids {
                            session_id: session.clone(),
                            ..Ids::default()
                        });
                    if on_wrapper {
                        f = f.note(format!(
                            "`{spec}` was asked for on the wrapper's command line; the agent's own log does not say which model it was given"
                        ));
                    }
                    if let Some((failed, failed_at)) = fallback_from {
                        f = f
                            .also(*failed_at, format!("`{failed}` could not be initialised"))
                            .note(format!(
                                "the agent could not initialise `{failed}` (its catalogue has no such model) and fell back to its default, `{raw}`, instead of failing"
                            ));
                    }
                    if let Some(step) = analysis.events_after(e.seq).find_map(|x| match &x.kind {
                        EventKind::StepFinished(s)
                            if s.requested_model.as_deref() == Some(model.as_str()) =>
                        {
                            Some(s)
                        }
                        _ => None,
                    }) {
                        let answered = step
                            .responded_model
                            .as_deref()
                            .map(|r| format!(" (the provider answered as `{r}`, its name for it)"))
                            .unwrap_or_default();
                        f = f.note(format!("the steps ran on `{model}`{answered}"));
                    }
                    out.push(f.help("make the agent fail when the requested provider/model cannot be resolved, or configure the provider the user asked for"));
                }
                _ => {}
            }
        }
    }
}

/// In a session store, each user message records the model it asked for (`model`), and each
/// assistant message the model that answered (`providerID`, `modelID`): one finding per session
/// whose answers came from another model. Summaries and compactions are left out: the agent may
/// run them on a model of its own.
fn stored(analysis: &Analysis, out: &mut Vec<Finding>) {
    use crate::model::MessageBody;
    for session in &analysis.sessions {
        let mut mismatched = Vec::new();
        // The session's messages by id, built when a reply first needs its parent: one lookup
        // per reply, not a walk of the session (the first message of an id wins, as
        // `Session::message` finds it).
        let mut by_id: Option<crate::FastMap<&str, &crate::session::Message>> = None;
        for m in &session.messages {
            let Some(MessageBody::Assistant(a)) = m.info.as_ref().map(|i| &i.body) else {
                continue;
            };
            if a.summary == Some(true)
                || a.mode == "compaction"
                || a.agent.as_deref() == Some("compaction")
                || a.model_id.is_empty()
            {
                continue;
            }
            let by_id = by_id.get_or_insert_with(|| {
                crate::first_of(session.messages.iter().map(|m| (m.id.as_str(), m)))
            });
            let asked = by_id.get(a.parent_id.as_str()).and_then(|&u| {
                match u.info.as_ref().map(|i| &i.body) {
                    Some(MessageBody::User(user)) => user.model.as_ref().map(|r| (u, r)),
                    _ => None,
                }
            });
            let Some((user, wanted)) = asked else {
                continue;
            };
            if wanted.model_id.is_empty() {
                continue;
            }
            let spec = format!("{}/{}", wanted.provider_id, wanted.model_id);
            if !same_model(&spec, &a.provider_id, &a.model_id) {
                mismatched.push((m, user, spec, format!("{}/{}", a.provider_id, a.model_id)));
            }
        }
        let Some((m, user, spec, ran)) = mismatched.first() else {
            continue;
        };
        let more = match mismatched.len() {
            1 => String::new(),
            n => format!(" ({n} replies in all)"),
        };
        let mut f = ModelSubstituted::META
            .finding(format!(
                "the user asked for `{spec}`, but `{ran}` answered{more}"
            ))
            .ids(Ids {
                session_id: Some(session.id.clone()),
                message_id: Some(m.id.clone()),
                ..Ids::default()
            });
        if let Some(span) = m.span {
            f = f.at(span.head(), format!("`{ran}` answered this message"));
        }
        if let Some(span) = user.span {
            f = f.also(Some(span.head()), format!("the user asked for `{spec}`"));
        }
        out.push(f.help("check the agent's model configuration and fallbacks: the reply did not come from the model the user chose"));
    }
}

/// Whether `provider/model` is what `spec` asks for: the same model (with the provider, when
/// `spec` names one), or a dated, `-preview`, `-latest` or `-exp` variant of it.
pub(super) fn same_model(spec: &str, provider: &str, model: &str) -> bool {
    let (want_provider, want_model) = match spec.split_once('/') {
        Some((p, m)) => (Some(p), m),
        None => (None, spec),
    };
    if want_provider.is_some_and(|p| p != provider) {
        // `openrouter/anthropic/claude-x` names the model with a slash; a spec that is the
        // whole raw model of another provider is not the same.
        return false;
    }
    variant_of(model, want_model)
}

fn variant_of(model: &str, want: &str) -> bool {
    if model == want {
        return true;
    }
    let Some(rest) = model.strip_prefix(want).and_then(|r| r.strip_prefix('-')) else {
        return false;
    };
    let date = rest.chars().all(|c| c.is_ascii_digit() || c == '-') && !rest.is_empty();
    date || ["preview", "latest", "exp"]
        .iter()
        .any(|w| rest.starts_with(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansions_and_variants_are_the_same_model() {
        assert!(same_model("kimi-k2.5-free", "opencode", "kimi-k2.5-free"));
        assert!(same_model(
            "opencode/kimi-k2.5-free",
            "opencode",
            "kimi-k2.5-free"
        ));
        assert!(same_model(
            "google/gemini-3-pro",
            "google",
            "gemini-3-pro-preview"
        ));
        assert!(same_model(
            "anthropic/claude-sonnet-4-5",
            "anthropic",
            "claude-sonnet-4-5-20250929"
        ));
        assert!(!same_model("kilo/glm-5-free", "opencode", "kimi-k2.5-free"));
        assert!(!same_model("glm-4.7-free", "opencode", "kimi-k2.5-free"));
        assert!(!same_model("opencode/gpt-5", "opencode", "gpt-5-nano"));
    }
}
