//! stub, being written.
use crate::{Model, ModelError, ModelRequest, ModelResponse, ProviderConfig, StreamDelta};

/// stub
pub struct AnthropicModel {
    name: String,
}

impl AnthropicModel {
    /// stub
    pub fn new(config: ProviderConfig) -> Result<AnthropicModel, ModelError> {
        Ok(AnthropicModel {
            name: format!("{}/{}", config.id, config.model),
        })
    }
}

#[async_trait::async_trait]
impl Model for AnthropicModel {
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
