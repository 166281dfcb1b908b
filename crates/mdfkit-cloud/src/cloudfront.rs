//! CloudFront signed URLs with a custom policy, signed with the private key of a key pair in the
//! distribution's trusted key group.
//!
//! From the CloudFront Developer Guide, "Create a signed URL using a custom policy"
//! (<https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/private-content-creating-signed-url-custom-policy.html>):
//! the policy is JSON without white space,
//! `{"Statement":[{"Resource":URL,"Condition":{"DateLessThan":{"AWS:EpochTime":N},
//! "DateGreaterThan":{"AWS:EpochTime":N},"IpAddress":{"AWS:SourceIp":CIDR}}}]}` (only
//! `DateLessThan` required; `Resource` may hold `*` and `?` wildcards); the signature is RSA
//! PKCS#1 v1.5 over the SHA-1 of the policy bytes. Both are sent in CloudFront's URL-safe base64
//! (`+` → `-`, `=` → `_`, `/` → `~`) as the `Policy` and `Signature` query parameters, with
//! `Key-Pair-Id`.
//!
//! The `rsa` crate has a known timing side channel in decryption and signing (RUSTSEC-2023-0071,
//! no fixed release yet): a concern where an attacker can time many signatures made with the same
//! key. `share` signs a handful of links on the user's own machine, so it is accepted here.

use base64::Engine;
use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::pkcs1v15::SigningKey;
use rsa::pkcs8::DecodePrivateKey;
use rsa::signature::{SignatureEncoding, Signer};
use rsa::RsaPrivateKey;

use mdfkit::{Error, ErrorKind, Result};

/// What a signed URL allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The URL or URL pattern (`*` any characters, `?` one) the signature opens.
    pub resource: String,
    /// Refused from this Unix time on.
    pub date_less_than: i64,
    /// Refused before this Unix time, if set.
    pub date_greater_than: Option<i64>,
    /// Only for viewers in this IPv4 or IPv6 CIDR block (a bare address means just it).
    pub source_ip: Option<String>,
}

impl Policy {
    /// The policy document as CloudFront reads it (no white space).
    pub fn to_json(&self) -> String {
        let mut condition = format!("\"DateLessThan\":{{\"AWS:EpochTime\":{}}}", self.date_less_than);
        if let Some(t) = self.date_greater_than {
            condition.push_str(&format!(",\"DateGreaterThan\":{{\"AWS:EpochTime\":{t}}}"));
        }
        if let Some(ip) = &self.source_ip {
            condition.push_str(&format!(",\"IpAddress\":{{\"AWS:SourceIp\":\"{}\"}}", json_escape(ip)));
        }
        format!(
            "{{\"Statement\":[{{\"Resource\":\"{}\",\"Condition\":{{{condition}}}}}]}}",
            json_escape(&self.resource)
        )
    }
}

/// `ip` as the CIDR block CloudFront wants: an address alone gets `/32` (IPv4) or `/128` (IPv6).
pub fn source_ip_cidr(ip: &str) -> Result<String> {
    let bad = || Error::new(ErrorKind::NotFound, format!("{ip}: not an IP address or CIDR block (203.0.113.0/24)"));
    let (addr, bits) = match ip.split_once('/') {
        Some((a, b)) => (a, Some(b.parse::<u8>().map_err(|_| bad())?)),
        None => (ip, None),
    };
    let addr: std::net::IpAddr = addr.parse().map_err(|_| bad())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let bits = bits.unwrap_or(max);
    if bits > max {
        return Err(bad());
    }
    Ok(format!("{addr}/{bits}"))
}

/// Base64 with CloudFront's replacements for characters that are special in URLs.
pub fn url_safe_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes).replace('+', "-").replace('=', "_").replace('/', "~")
}

/// The RSA-SHA1 signature of `policy_json` with a PEM private key (PKCS#1 `BEGIN RSA PRIVATE
/// KEY` or PKCS#8 `BEGIN PRIVATE KEY`), in CloudFront's base64.
pub fn sign_policy(policy_json: &str, private_key_pem: &str) -> Result<String> {
    let key = RsaPrivateKey::from_pkcs1_pem(private_key_pem)
        .or_else(|_| RsaPrivateKey::from_pkcs8_pem(private_key_pem))
        .map_err(|e| {
            Error::new(
                ErrorKind::NotFound,
                format!("the CloudFront private key is not an RSA key in PEM (PKCS#1 or PKCS#8): {e}"),
            )
        })?;
    let signature = SigningKey::<sha1::Sha1>::new(key).sign(policy_json.as_bytes());
    Ok(url_safe_base64(&signature.to_bytes()))
}

/// `url` (the object's CloudFront URL, with its own query string if any) signed for `policy`.
pub fn signed_url(url: &str, policy: &Policy, key_pair_id: &str, private_key_pem: &str) -> Result<String> {
    let json = policy.to_json();
    let signature = sign_policy(&json, private_key_pem)?;
    let separator = if url.contains('?') { '&' } else { '?' };
    Ok(format!(
        "{url}{separator}Policy={}&Signature={signature}&Key-Pair-Id={key_pair_id}",
        url_safe_base64(json.as_bytes())
    ))
}

fn json_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use rsa::pkcs1v15::{Signature, VerifyingKey};
    use rsa::signature::Verifier;

    use super::*;

    /// A 2048-bit key made for this test (`openssl genrsa -traditional 2048`).
    const TEST_KEY: &str = "\
-----BEGIN RSA PRIVATE KEY-----\n\
MIIEpQIBAAKCAQEAv6mULlpbVFKSs4hJ5bocTO47uKQVtocVoyrMGlyj/C+zio/C\n\
X3wzBVc/ni1bWu5C19m+QiDk7UE3JswrqCxLgSoSvayZuOvn/DaZsrQt3rffKu/9\n\
0h9hT8qlIBehUj1CNo+tf1BM7FN34HnLha3ntQeytlPzqtappEafRlayCBHTbSOD\n\
YjKNUhYXFbG0cLW1eZwir9yP4VgoA2xSR9O+brDI2EhggbvnHZ31PB6O5F86jBit\n\
CIJ0YF2Bilt4GZKfjJjdvFaYUDnIyp43ORjjn0JZUiM+2JcCy8gPGgPxx8kvy6wf\n\
X3wyKfCM4cIZkYfgxoyoC8rsjMltLVzTQyyxqQIDAQABAoIBAAxVs9Nq3cNWwBm9\n\
TPIzsNQTpfTLXJlfZrlWTQXqTeRyRnYFq/78rYTruUyrAxzeRh+BpDC50LnjL1M4\n\
Ixwi46YXqNabp9YCmq687dXWKjiR8VMgWF/ARME/m7JtyuRRzHPZ+dK+foDcG1Qv\n\
SnWbPFUGfo4k54LoZ0kLAX+jnzgNHxsfdqy3uM1/s665lxpq5G03mjAAlA8ghN+d\n\
kMjAQkDGeogRB2x1Sb3pNVNje+qMupPJvMCs8wkGgEZT9JodjjLAmmaNw8K8IpKH\n\
wou3nZjnR3Fd667AyQh7l5phrNWtBHPSiIZENe0DWQCioE6hygKu84DPHhuHavDl\n\
016NAIECgYEA5qF54I+83Vp8Sx7NPHexT9CB1IrA0yWiMY5Z+HJ6bQjldBRQFL66\n\
CTlChfrgenPmh+skmFe8ZggudJv2xhI9FFC60nFDXZ4v3kC84r1rCpMr8Sd3V6g0\n\
I9S4Bd1V3wnFcsjF/1WAr5C3RNn1RBNFcMSyu+zb/LP3FN2Z6iHfcMECgYEA1L7C\n\
s1XnJFKstSmSdrpdOETBbAQiZRdTkx7PtoMO0EPdy1zMZfPqUd6nn7bxflYe4/kz\n\
iS+08TJiG51lWibi7ljBZsxFe0ag6KmDTrfo8k+LFr/ex0SCQ4G2+ZBc2VkhwoOX\n\
F99UT8w09LIyK1EQy3pCTtOtpfyCYUaBFb/BkukCgYEAnHrfKKAd8socHxPtCKPl\n\
aFP+Yukp35lfLOR64vk5W5V3qYTGuOyXaP6yxhjsCeltdrbyg3Kz3z6Z1oCjtMxX\n\
KNuFhpdWr8ROkiu2fNksMWadn+e5L35usgj4OvJr+wK0NydGP/IReA1ma46+vMue\n\
h97NrngM4q5wbHXWomcNJYECgYEAzvuxzm1bbzmIktGZkC4NmDs8vGzhUd16EH8/\n\
s+CavwHofn0Q2HiRl4m7KGcDWdlMQJ0qCOUDdE+CqD9gZm/DBgYQVIWVbDTxRKv3\n\
9tRzrZy6RC30/4al/ivr668KxuQzNl502GMOUnzpYNEmgoJihrWyYaMNJZsg9qdz\n\
28cu/FECgYEAo1nWzIq79pCTe5i2R6oyAMyaUqvE+EIKHzuhYLqpclWm+YwyS72B\n\
nHikhLmvxS4L60xv3rIjKUhbF3moHD/yyOEyQokKMRkSbMd6SFLW7efGc8D6exkl\n\
A6Z4HD0tM24Y3PtKhhE4nOPgSPYOlMS/A/IECZtVMnjAX2MWxinpGhw=\n\
-----END RSA PRIVATE KEY-----\n";

    fn policy() -> Policy {
        Policy {
            resource: "https://d111111abcdef8.cloudfront.net/exports/*".into(),
            date_less_than: 1_767_225_600,
            date_greater_than: Some(1_767_139_200),
            source_ip: Some("203.0.113.0/24".into()),
        }
    }

    fn from_url_safe_base64(s: &str) -> Vec<u8> {
        let standard = s.replace('-', "+").replace('_', "=").replace('~', "/");
        base64::engine::general_purpose::STANDARD.decode(standard).unwrap()
    }

    #[test]
    fn policy_documents() {
        assert_eq!(
            policy().to_json(),
            r#"{"Statement":[{"Resource":"https://d111111abcdef8.cloudfront.net/exports/*","Condition":{"DateLessThan":{"AWS:EpochTime":1767225600},"DateGreaterThan":{"AWS:EpochTime":1767139200},"IpAddress":{"AWS:SourceIp":"203.0.113.0/24"}}}]}"#
        );
        let only_expiry = Policy { date_greater_than: None, source_ip: None, ..policy() };
        assert_eq!(
            only_expiry.to_json(),
            r#"{"Statement":[{"Resource":"https://d111111abcdef8.cloudfront.net/exports/*","Condition":{"DateLessThan":{"AWS:EpochTime":1767225600}}}]}"#
        );
        assert_eq!(source_ip_cidr("203.0.113.7").unwrap(), "203.0.113.7/32");
        assert_eq!(source_ip_cidr("2001:db8::/32").unwrap(), "2001:db8::/32");
        assert!(source_ip_cidr("203.0.113.0/33").is_err() && source_ip_cidr("host").is_err());
    }

    /// The signature equals the one `openssl dgst -sha1 -sign` made for the same policy and key
    /// (PKCS#1 v1.5 is deterministic), and verifies with the public key.
    #[test]
    fn signs_like_openssl_and_verifies() {
        let url = signed_url(
            "https://d111111abcdef8.cloudfront.net/exports/a.parquet",
            &policy(),
            "K2JCJMDEHXQW5F",
            TEST_KEY,
        )
        .unwrap();
        let query = url.split_once('?').unwrap().1;
        let params: Vec<(&str, &str)> = query.split('&').map(|p| p.split_once('=').unwrap()).collect();
        assert_eq!(params.iter().map(|(k, _)| *k).collect::<Vec<_>>(), ["Policy", "Signature", "Key-Pair-Id"]);
        assert_eq!(params[2].1, "K2JCJMDEHXQW5F");
        assert_eq!(from_url_safe_base64(params[0].1), policy().to_json().as_bytes());
        assert_eq!(params[1].1, "ndMMD9WhlgokoBjLVaRV-XUjmUZfjDcXhHTTboOYqbRh1j8JPXrcu-sHjYKCiXYf2LLWUglYfJ4IFKc4W3ZGKZt9zwj5h99aUIVXFjSWkkuBON3aYqpNgF~5pSkhOvY-sKc2sZiAMTDky~vIbRR8fZZIwEsKYwzsMVvtnrlNOB8n3U1UhFSYIuA~5MmvU0IV5ylfFdNwHsrUVKNh0Zy2v28vHj7~xNQ4NTyfq0i-38S7r5BW47H~0JnI6ZfkzqwHW3mV6OBRLt4OqEYlWph67uy31jne7bUjDsYsqnLHV6pUJPM3TMDLUceaKQVcON7gZn6v2e71oeazFwi-6Ko~0w__");
        assert!(params.iter().all(|(_, v)| v.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_~".contains(&b))));
        let public = RsaPrivateKey::from_pkcs1_pem(TEST_KEY).unwrap().to_public_key();
        let signature = Signature::try_from(from_url_safe_base64(params[1].1).as_slice()).unwrap();
        let verifier = VerifyingKey::<sha1::Sha1>::new(public);
        verifier.verify(policy().to_json().as_bytes(), &signature).unwrap();
        let other = Policy { date_less_than: 1_767_225_601, ..policy() };
        assert!(verifier.verify(other.to_json().as_bytes(), &signature).is_err());
        assert_eq!(
            signed_url("https://d1.cloudfront.net/a?x=1", &policy(), "K", TEST_KEY)
                .unwrap()
                .split_once("?x=1&Policy=")
                .map(|(u, _)| u),
            Some("https://d1.cloudfront.net/a")
        );
        assert!(sign_policy("{}", "not a key").is_err());
    }
}
