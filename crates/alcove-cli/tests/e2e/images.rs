//! Images (issue 36, point 3): Read of a PNG reaches the request as an
//! image on both wires, an image over the APIs' limit is made to fit
//! (the strict fake server refuses one over 5 MB of base64, as Anthropic
//! does), and a model configured without vision gets a note instead.

use alcove_testkit::{Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::support::{exec_command, finish, setup};

pub(crate) fn png(width: u32, height: u32, noisy: bool) -> Vec<u8> {
    let mut seed = 11u32;
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        if noisy {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            image::Rgb([(seed >> 24) as u8, (seed >> 16) as u8, (seed >> 8) as u8])
        } else {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, 200])
        }
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn configure(env: &TestEnv, toml: &str) {
    let path = env.home().join("config.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(toml);
    std::fs::write(path, text).unwrap();
}

/// Runs a Read of `file` on the given wire and returns the second request's body.
fn read_image(env: &TestEnv, openai: bool, prompt: &str) -> (i32, String, Value) {
    let server = alcove_testkit::FakeServer::start(Script::new().conversation(
        prompt,
        vec![
            Step::tool_call("Read", json!({"file_path": "shot.png"})),
            Step::text("I see it."),
        ],
    ));
    let mut command = exec_command(env, &server, &[prompt]);
    if openai {
        command
            .env("OPENAI_BASE_URL", server.openai_url())
            .env("OPENAI_API_KEY", "test-key")
            .env("ALCOVE_MODEL", "openai/fake-model");
    }
    let out = finish(command.spawn().unwrap());
    let body = server
        .requests_for(prompt)
        .get(1)
        .map(|request| request.body.clone())
        .unwrap_or(Value::Null);
    (out.code, out.stderr, body)
}

#[test]
fn read_of_a_png_reaches_the_anthropic_request_inside_the_tool_result() {
    let (env, _server) = setup(Script::new());
    let bytes = png(64, 48, false);
    std::fs::write(env.path("shot.png"), &bytes).unwrap();
    let (code, stderr, body) = read_image(&env, false, "look at the shot");
    assert_eq!(code, 0, "{stderr}");
    let result = &body["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("PNG, 64x48"), "{text}");
    let image = &result["content"][1];
    assert_eq!(image["type"], "image");
    assert_eq!(image["source"]["media_type"], "image/png");
    let data = image["source"]["data"].as_str().unwrap();
    // The file as it was: small enough to go unchanged.
    assert_eq!(data.len(), bytes.len().div_ceil(3) * 4);
    assert!(data.starts_with("iVBORw0KGgo"), "{}", &data[..20]);
}

#[test]
fn read_of_a_png_reaches_the_chat_completions_request_after_the_tool_message() {
    let (env, _server) = setup(Script::new());
    std::fs::write(env.path("shot.png"), png(64, 48, false)).unwrap();
    configure(&env, "[model_options.openai]\nvision = true\n");
    let (code, stderr, body) = read_image(&env, true, "look at the shot");
    assert_eq!(code, 0, "{stderr}");
    let messages = body["messages"].as_array().unwrap();
    let tool = messages.iter().position(|m| m["role"] == "tool").unwrap();
    assert!(
        messages[tool]["content"]
            .as_str()
            .unwrap()
            .contains("PNG, 64x48")
    );
    let after = &messages[tool + 1];
    assert_eq!(after["role"], "user");
    let parts = after["content"].as_array().unwrap();
    let url = parts
        .iter()
        .find(|part| part["type"] == "image_url")
        .and_then(|part| part["image_url"]["url"].as_str())
        .unwrap();
    assert!(
        url.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{}",
        &url[..40]
    );
}

#[test]
fn an_image_over_the_limit_is_made_to_fit_and_accepted() {
    let (env, _server) = setup(Script::new());
    let bytes = png(1400, 1400, true);
    assert!(
        bytes.len().div_ceil(3) * 4 > 5 * 1024 * 1024,
        "{}",
        bytes.len()
    );
    std::fs::write(env.path("shot.png"), &bytes).unwrap();
    let (code, stderr, body) = read_image(&env, false, "look at the big shot");
    // The strict server refuses an image over 5 MB: this one got through.
    assert_eq!(code, 0, "{stderr}");
    let result = &body["messages"][2]["content"][0];
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("PNG, 1400x1400"), "{text}");
    assert!(text.contains("sent resized to"), "{text}");
    let data = result["content"][1]["source"]["data"].as_str().unwrap();
    assert!(data.len() <= 5 * 1024 * 1024);
    assert_eq!(result["content"][1]["source"]["media_type"], "image/jpeg");
}

#[test]
fn a_model_without_vision_gets_a_note_instead_of_the_image() {
    let (env, _server) = setup(Script::new());
    std::fs::write(env.path("shot.png"), png(64, 48, false)).unwrap();
    configure(&env, "[model_options.anthropic]\nvision = false\n");
    let (code, stderr, body) = read_image(&env, false, "look at the shot");
    assert_eq!(code, 0, "{stderr}");
    let parts = body["messages"][2]["content"][0]["content"]
        .as_array()
        .unwrap();
    assert!(parts.iter().all(|part| part["type"] == "text"), "{parts:?}");
    assert!(
        parts[1]["text"]
            .as_str()
            .unwrap()
            .contains("configured without vision"),
        "{parts:?}"
    );
}

#[test]
fn an_at_image_in_the_prompt_is_attached_to_the_message() {
    let (env, server) =
        setup(Script::new().conversation("what is in", vec![Step::text("A gradient.")]));
    std::fs::write(env.path("shot.png"), png(32, 16, false)).unwrap();
    let out = finish(
        exec_command(&env, &server, &["what is in @shot.png?"])
            .spawn()
            .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("Attached shot.png (PNG, 32x16"),
        "{}",
        out.stderr
    );
    let body = &server.requests_for("what is in")[0].body;
    let content = &body["messages"][0]["content"];
    assert_eq!(content[0]["text"], "what is in @shot.png?");
    assert_eq!(content[1]["type"], "image");
    assert_eq!(content[1]["source"]["media_type"], "image/png");
}

/// A grayscale PNG of `edge`x`edge` black pixels: a couple of MB on disk
/// for 20000x20000, 400 MB once decoded. Its zlib stream is written by
/// hand (one literal zero, then matches of 258 bytes at distance 1, in
/// deflate's fixed codes): the `png` crate's encoder, unoptimized in a
/// test build, took a minute to compress 400 MB.
fn huge_png(edge: u32) -> Vec<u8> {
    let raw = u64::from(edge) * (u64::from(edge) + 1); // a filter byte per row
    let mut bits = BitWriter::default();
    bits.push(1, 1); // the final block
    bits.push(1, 2); // fixed codes
    bits.push_code(0x30, 8); // literal 0
    let mut left = raw - 1;
    while left >= 258 + 3 {
        bits.push_code(0xc5, 8); // length 258 (symbol 285)
        bits.push_code(0, 5); // distance 1
        left -= 258;
    }
    for _ in 0..left {
        bits.push_code(0x30, 8);
    }
    bits.push_code(0, 7); // end of block
    let mut zlib = vec![0x78, 0x01];
    zlib.extend(bits.finish());
    let adler = (((raw % 65_521) as u32) << 16) | 1;
    zlib.extend_from_slice(&adler.to_be_bytes());

    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&edge.to_be_bytes());
    ihdr.extend_from_slice(&edge.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, 0]); // 8-bit grayscale
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in [(&b"IHDR"[..], &ihdr[..]), (b"IDAT", &zlib), (b"IEND", &[])] {
        png.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut chunk = kind.to_vec();
        chunk.extend_from_slice(data);
        png.extend_from_slice(&chunk);
        png.extend_from_slice(&crc32(&chunk).to_be_bytes());
    }
    png
}

/// Deflate's bit order: fields least significant bit first, Huffman codes
/// most significant bit first.
#[derive(Default)]
struct BitWriter {
    bytes: Vec<u8>,
    current: u32,
    used: u32,
}

impl BitWriter {
    fn push(&mut self, value: u32, count: u32) {
        for bit in 0..count {
            self.current |= ((value >> bit) & 1) << self.used;
            self.used += 1;
            if self.used == 8 {
                self.bytes.push(self.current as u8);
                self.current = 0;
                self.used = 0;
            }
        }
    }

    fn push_code(&mut self, code: u32, count: u32) {
        for bit in (0..count).rev() {
            self.push((code >> bit) & 1, 1);
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if self.used > 0 {
            self.bytes.push(self.current as u8);
        }
        self.bytes
    }
}

fn crc32(bytes: &[u8]) -> u32 {
    let table: Vec<u32> = (0..256u32)
        .map(|n| {
            (0..8).fold(n, |c, _| {
                if c & 1 == 1 {
                    (c >> 1) ^ 0xedb8_8320
                } else {
                    c >> 1
                }
            })
        })
        .collect();
    !bytes.iter().fold(0xffff_ffffu32, |crc, &byte| {
        table[((crc ^ u32::from(byte)) & 0xff) as usize] ^ (crc >> 8)
    })
}

/// The `VmHWM` (peak resident set) of a live process, in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn four_huge_images_in_one_reply_are_refused_from_their_headers_within_400_mb() {
    let prompt = "look at the four scans";
    let names = ["a.png", "b.png", "c.png", "d.png"];
    let (env, server) = setup(Script::new().conversation(
        prompt,
        vec![
                Step::reply(
                    names
                        .iter()
                        .map(|name| {
                            alcove_testkit::Block::tool_call("Read", json!({"file_path": name}))
                        })
                        .collect(),
                ),
                // Answered late, so the peak is read while alcove still runs.
                Step::text("Too large.").delay(1500),
            ],
    ));
    // The hand-written stream is a valid PNG: a small one decodes.
    let small = image::load_from_memory(&huge_png(300)).unwrap().to_luma8();
    assert_eq!(small.dimensions(), (300, 300));
    assert!(small.pixels().all(|pixel| pixel.0 == [0]));
    let bytes = huge_png(20_000);
    assert!(bytes.len() < 4 * 1024 * 1024, "{} bytes", bytes.len());
    for name in names {
        std::fs::write(env.path(name), &bytes).unwrap();
    }
    let child = exec_command(&env, &server, &[prompt]).spawn().unwrap();
    let pid = child.id();
    let watcher = std::thread::spawn(move || {
        let mut peak = 0;
        while let Some(kib) = peak_rss_kib(pid) {
            peak = peak.max(kib);
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        peak
    });
    let out = finish(child);
    let peak_kib = watcher.join().unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(peak_kib > 0, "the peak was never read");
    assert!(
        peak_kib < 400 * 1024,
        "alcove's peak RSS was {} MB",
        peak_kib / 1024
    );
    let requests = server.requests_for(prompt);
    let results = requests[1].tool_results();
    assert_eq!(results.len(), 4);
    for (_, content, is_error) in results {
        assert!(is_error, "{content}");
        assert!(
            content.contains("20000x20000") && content.contains("was not decoded"),
            "{content}"
        );
    }
}
