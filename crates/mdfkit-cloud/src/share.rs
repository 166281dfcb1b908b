//! Time-limited links to one object, for someone without credentials:
//!
//! | target | link | limits |
//! |---|---|---|
//! | `s3://bucket/key` | SigV4 presigned GET ([`super::s3::S3::presign_get`]) | 1 s to 7 days; no start time, no address range (S3 checks those in bucket policies, not in the URL) |
//! | `az://container/blob` | service SAS, read only ([`super::azure::Azure::sas_url`]) | start, expiry, an IPv4 range (`sip`); HTTPS only unless the endpoint is plain HTTP |
//! | `https://dxxxx.cloudfront.net/...` | CloudFront signed URL, custom policy ([`super::cloudfront`]) | start, expiry, an IPv4/IPv6 CIDR block, a resource pattern with wildcards |
//!
//! The S3 and Azure links are signed with the caller's own keys (SigV4 secret, account key):
//! nothing is sent to the service to make them.

use super::azure::Azure;
use super::cloudfront::{self, Policy};
use super::s3::S3;
use super::sign::UtcTime;
use super::{block_on, is_link, is_url, ObjectUrl, Scheme};
use mdfkit::{Error, ErrorKind, Result};

/// A CloudFront key pair: its id and the PEM text of its private key.
#[derive(Debug, Clone)]
pub struct CloudFrontKey {
    pub key_pair_id: String,
    pub private_key_pem: String,
}

/// What a link allows.
#[derive(Debug, Clone, Default)]
pub struct ShareOptions {
    /// Seconds from now until the link stops working.
    pub expires_in: u64,
    /// The link does not work before this time.
    pub start: Option<UtcTime>,
    /// Only for clients in this address or CIDR block.
    pub ip: Option<String>,
    /// For CloudFront URLs: the key pair to sign with.
    pub cloudfront: Option<CloudFrontKey>,
    /// For CloudFront URLs: the URL pattern the signature opens (default: the URL itself).
    pub resource: Option<String>,
}

/// A link to `target` (`s3://`, `az://` or a CloudFront `https://` URL) as `options` say.
pub fn share(target: &str, options: &ShareOptions) -> Result<String> {
    if options.expires_in == 0 {
        return Err(Error::new(ErrorKind::NotFound, format!("{target}: a link must last at least one second")));
    }
    let now = UtcTime::now();
    let expiry = now.plus(i64::try_from(options.expires_in).unwrap_or(i64::MAX / 2).min(100 * 365 * 86_400));
    if is_link(target) {
        let Some(key) = &options.cloudfront else {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "{target}: an http(s) URL is signed for CloudFront: give --cloudfront-key-pair-id and \
                     --cloudfront-private-key (for S3 or Azure objects give s3:// or az:// URLs)"
                ),
            ));
        };
        let policy = Policy {
            resource: options.resource.clone().unwrap_or_else(|| target.to_string()),
            date_less_than: expiry.unix,
            date_greater_than: options.start.map(|t| t.unix),
            source_ip: options.ip.as_deref().map(cloudfront::source_ip_cidr).transpose()?,
        };
        return cloudfront::signed_url(target, &policy, &key.key_pair_id, &key.private_key_pem);
    }
    if !is_url(target) {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "{target}: not an object URL (s3://bucket/key, az://container/blob, https://....cloudfront.net/...)"
            ),
        ));
    }
    let url = ObjectUrl::parse(target)?;
    if options.cloudfront.is_some() || options.resource.is_some() {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!("{url}: CloudFront options go with the object's https://....cloudfront.net/ URL"),
        ));
    }
    match url.scheme {
        Scheme::S3 => {
            if options.ip.is_some() || options.start.is_some() {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "{url}: an S3 presigned URL cannot carry an address range or a start time \
                         (use a bucket policy with aws:SourceIp, or a CloudFront signed URL)"
                    ),
                ));
            }
            block_on(S3::for_url(&url)?.presign_get(&url.key, options.expires_in))
        }
        Scheme::Azure => {
            let Some(client) = Azure::for_url(&url)? else {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("{url}: a SAS link is signed with the account key: set AZURE_STORAGE_ACCOUNT_KEY"),
                ));
            };
            client.sas_url(&url.key, options.start, expiry, options.ip.as_deref()).map(|(link, _)| link)
        }
    }
}
