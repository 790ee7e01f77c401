//! stub, being written.
use crate::{Model, ModelError, ModelRequest, ModelResponse, ProviderConfig, StreamDelta};

/// stub
pub struct OpenAiModel {
    name: String,
}

impl OpenAiModel {
    /// stub
    pub fn new(config: ProviderConfig) -> Result<OpenAiModel, ModelError> {
        Ok(OpenAiModel {
            name: format!("{}/{}", config.id, config.model),
        })
    }
}

#[async_trait::async_trait]
impl Model for OpenAiModel {
    fn name(&self) -> &str {
        &self.name
    }
    async fn complete(
        &self,
        _request: &ModelRequest,
        _on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
    ) -> Result<ModelResponse, ModelError> {
        Err(ModelError::Protocol("not implemented".into()))
    }
}

pub(crate) async fn discover_local(_timeout: std::time::Duration) -> Option<String> {
    None
}
