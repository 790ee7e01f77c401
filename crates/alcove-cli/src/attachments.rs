//! Images named in a prompt: `@screenshot.png` attaches the image to the
//! prompt's message, as Claude Code does, made to fit the model APIs'
//! limits like Read's images (`alcove_tools::image`). The text stays as
//! typed; the front end says what was attached.

use std::path::Path;

use alcove_protocol::{ContentBlock, Message};

/// The prompt as a user message with the images its `@path` words name
/// (relative to `root`), and one line per attachment for the UI. A word
/// that names no image is left alone; an image that cannot be read says
/// why.
pub(crate) fn prompt_message(prompt: &str, root: &Path) -> (Message, Vec<String>) {
    let mut message = Message::user_text(prompt);
    let mut lines = Vec::new();
    for word in prompt.split_whitespace() {
        let Some(name) = word.strip_prefix('@') else {
            continue;
        };
        let name = name.trim_end_matches([',', '.', ';', ':', ')', '!', '?']);
        if !is_image_name(name) {
            continue;
        }
        let path = root.join(name);
        let prepared = std::fs::read(&path)
            .map_err(|err| err.to_string())
            .and_then(|bytes| alcove_tools::image::prepare(&bytes));
        match prepared {
            Ok(prepared) => {
                lines.push(format!("Attached {name} ({})", prepared.description));
                message.content.push(ContentBlock::Image {
                    media_type: prepared.image.media_type,
                    data: prepared.image.data,
                });
            }
            Err(reason) => lines.push(format!("Could not attach {name}: {reason}")),
        }
    }
    (message, lines)
}

fn is_image_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".png", ".jpg", ".jpeg", ".gif", ".webp"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_image_words_attach_the_image() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = std::io::Cursor::new(Vec::new());
        image::RgbImage::new(3, 2)
            .write_to(&mut bytes, image::ImageFormat::Png)
            .unwrap();
        std::fs::write(dir.path().join("shot.png"), bytes.into_inner()).unwrap();
        let (message, lines) = prompt_message(
            "what is in @shot.png? and @missing.png, @notes.md",
            dir.path(),
        );
        assert_eq!(
            message.text(),
            "what is in @shot.png? and @missing.png, @notes.md"
        );
        let ContentBlock::Image { media_type, data } = &message.content[1] else {
            panic!("no image: {message:?}");
        };
        assert_eq!(media_type, "image/png");
        assert!(data.starts_with("iVBORw0KGgo"), "{data}");
        assert_eq!(message.content.len(), 2);
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with("Attached shot.png (PNG, 3x2"),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("Could not attach missing.png"),
            "{lines:?}"
        );
    }
}
