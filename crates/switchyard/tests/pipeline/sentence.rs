//! The sentence the stream tests ask for and the scripted providers stream word by word:
//! the request, the words, a stream cut after some of them, and draining a committed
//! stream into the text the client got.

use futures_util::StreamExt as _;
use switchyard::gateway::{ChatStream, StreamEvent};
use switchyard::provider::scripted::{Step, StreamStep};
use switchyard::ChatRequest;

/// The sentence, a chunk a word.
pub const WORDS: [&str; 6] = ["The ", "quick ", "brown ", "fox ", "jumps ", "over."];

/// The request for it.
pub fn req() -> ChatRequest {
    ChatRequest::from_prompt("say the sentence")
}

/// The first `n` words, then the stream simply ends (no finish signal).
pub fn cut_after(n: usize) -> Step {
    let Step::Stream(mut steps) = Step::stream_words(&WORDS) else {
        unreachable!()
    };
    steps.truncate(n);
    steps.push(StreamStep::End);
    Step::Stream(steps)
}

/// Drain a committed stream: (text delivered, final event).
pub async fn drain(mut s: ChatStream) -> (String, StreamEvent) {
    let mut text = String::new();
    while let Some(e) = s.next().await {
        match e {
            StreamEvent::Chunk(c) => text.push_str(&c.text),
            done => return (text, done),
        }
    }
    panic!("stream ended without Done or Failed");
}
