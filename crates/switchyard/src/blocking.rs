//! A blocking wrapper for callers without an async runtime.
//!
//! Owns [`BlockingGateway`]: the same [`Gateway`] driven by a private current-thread tokio
//! runtime. Do not call it from inside an async runtime (tokio refuses to block there).

use crate::chat::{ChatRequest, ChatResponse};
use crate::embedding::{EmbeddingRequest, EmbeddingResponse};
use crate::error::GatewayError;
use crate::gateway::{Gateway, ProviderHealth};

/// A [`Gateway`] with blocking methods.
#[derive(Debug)]
pub struct BlockingGateway {
    gateway: Gateway,
    runtime: tokio::runtime::Runtime,
}

impl BlockingGateway {
    /// Wrap `gateway`, starting a private runtime.
    ///
    /// # Errors
    /// When the runtime cannot start (no timer / OS resources).
    pub fn new(gateway: Gateway) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Self { gateway, runtime })
    }

    /// [`Gateway::chat`], blocking.
    ///
    /// # Errors
    /// As [`Gateway::chat`].
    pub fn chat(&self, route: &str, req: &ChatRequest) -> Result<ChatResponse, GatewayError> {
        self.runtime.block_on(self.gateway.chat(route, req))
    }

    /// [`Gateway::complete`], blocking.
    ///
    /// # Errors
    /// As [`Gateway::complete`].
    pub fn complete(&self, prompt: &str) -> Result<ChatResponse, GatewayError> {
        self.runtime.block_on(self.gateway.complete(prompt))
    }

    /// [`Gateway::embed`], blocking.
    ///
    /// # Errors
    /// As [`Gateway::embed`].
    pub fn embed(
        &self,
        route: &str,
        req: &EmbeddingRequest,
    ) -> Result<EmbeddingResponse, GatewayError> {
        self.runtime.block_on(self.gateway.embed(route, req))
    }

    /// [`Gateway::health`], blocking.
    #[must_use]
    pub fn health(&self) -> Vec<ProviderHealth> {
        self.runtime.block_on(self.gateway.health())
    }

    /// The async gateway inside.
    #[must_use]
    pub fn gateway(&self) -> &Gateway {
        &self.gateway
    }
}
