//! Claude Code's `AskUserQuestion`, answered from the phone.
//!
//! Claude Code 2.1.328 runs the `PermissionRequest` hook for
//! `AskUserQuestion` (found with the real client: the dialog it would show
//! is the question). A hook's `allow` whose `updatedInput` carries
//! `answers` (question text → the chosen label) is taken as the user's
//! answer; an `allow` without them reads to the model as "The user did not
//! answer the questions." So each question (at most four) becomes a
//! plangate question with its options as buttons and free text allowed,
//! asked one after another within `PLANGATE_HOOK_WAIT`; when every one is
//! answered in time the hook allows with the answers, otherwise it gives
//! no decision and Claude Code asks at its terminal.

use super::{Answer, Settings, ToolCall};
use crate::client::QuestionBody;
use plangate_engine::QuestionStatus;
use serde_json::{Map, Value};

/// Relay `call`'s questions; see the module docs.
pub(super) async fn relay(call: &ToolCall, settings: &Settings) -> Answer {
    let Some(questions) = call.tool_input["questions"].as_array().filter(|q| !q.is_empty() && q.len() <= 4) else {
        return Answer::NoDecision;
    };
    let deadline = tokio::time::Instant::now() + settings.wait;
    let mut answers = Map::new();
    for q in questions {
        let Some(text) = q["question"].as_str() else { return Answer::NoDecision };
        let options: Vec<String> =
            q["options"].as_array().map(|o| o.iter().filter_map(|o| o["label"].as_str().map(str::to_string)).collect()).unwrap_or_default();
        let body = QuestionBody { question: text.to_string(), options, allow_freetext: true };
        let Ok(id) = settings.client.ask(&call.session_id, &body).await else { return Answer::NoDecision };
        let answer = loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match settings.client.question(&call.session_id, &id, left).await {
                Ok(a) if a.status == QuestionStatus::Answered => break a.answer.unwrap_or_default(),
                Ok(_) if !left.is_zero() => continue,
                _ => {
                    eprintln!("plangate: nobody answered {text:?} in time; Claude Code asks here");
                    return Answer::NoDecision;
                }
            }
        };
        answers.insert(text.to_string(), Value::String(answer));
    }
    let mut input = call.tool_input.clone();
    input["answers"] = Value::Object(answers);
    Answer::Allow { updated_input: input }
}
