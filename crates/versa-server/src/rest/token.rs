//! The `token` subresource of ServiceAccounts (`kubectl create token`): an HTTP adapter over
//! `service_account::token_request`, which issues the token.

use super::{Answer, Ctx};
use crate::service_account::token_request::{self, StoreLookup};
use crate::status::Status;

/// `POST .../serviceaccounts/<name>/token`.
pub async fn create(ctx: &Ctx, body: &[u8]) -> Answer {
    let accounts = ctx.state.service_accounts.as_ref().ok_or_else(|| ctx.not_found())?;
    let namespace = ctx.namespace.as_deref().ok_or_else(|| Status::bad_request("namespace is required"))?;
    let request = token_request::decode(&ctx.headers, body)?;
    if let Some(record) = &ctx.audit
        && record.level() >= crate::audit::Level::Request
    {
        record.request_body(request.clone());
    }
    let lookup = StoreLookup { store: ctx.state.store.as_ref(), keys: &ctx.state.keys };
    let issued = token_request::create(accounts.issuer(), &lookup, namespace, &ctx.name, request).await?;
    if let Some(record) = &ctx.audit {
        record.annotate(token_request::ISSUED_CREDENTIAL_ID, &issued.credential_id);
    }
    Ok(ctx.respond(issued.code, &issued.answer))
}
