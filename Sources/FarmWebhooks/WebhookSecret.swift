import Crypto
import FarmModel
import Foundation

/// The key webhooks are signed with, per the Standard Webhooks convention: a secret written as `whsec_`
/// followed by the key in base64 (24 to 64 bytes). Read from `--webhook-secret-file`; the key never
/// appears in messages or logs, only its id (the first 8 hex digits of its SHA-256).
public struct WebhookSecret: Sendable {
    let key: SymmetricKey
    /// Names the key in logs and `webhooks list` without revealing it.
    public let keyID: String

    public init(text: String) throws(WebhookError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix(WebhookSecretText.prefix) else {
            throw WebhookError("a webhook secret starts with whsec_ followed by base64 (make one with `mediafarm webhooks new-secret`)")
        }
        var encoded = String(trimmed.dropFirst(WebhookSecretText.prefix.count))
        // Unpadded base64, as some tools write it.
        while encoded.utf8.count % 4 != 0 { encoded += "=" }
        guard let bytes = Data(base64Encoded: encoded) else {
            throw WebhookError("the webhook secret after whsec_ is not base64")
        }
        guard (24...64).contains(bytes.count) else {
            throw WebhookError("the webhook secret's key is \(bytes.count) bytes; Standard Webhooks keys are 24 to 64 bytes")
        }
        key = SymmetricKey(data: bytes)
        keyID = SHA256.hash(data: bytes).prefix(4).map { String(format: "%02x", $0) }.joined()
    }

    /// Reads the secret from `path` (the file's first line).
    public init(contentsOf path: String) throws(WebhookError) {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw WebhookError("\(path): cannot read the webhook secret file (\((error as NSError).localizedDescription))")
        }
        do {
            try self.init(text: String(text.split(separator: "\n", omittingEmptySubsequences: true).first ?? ""))
        } catch {
            throw WebhookError("\(path): \(error.message)")
        }
    }
}

/// Standard Webhooks signatures: `v1,` + base64(HMAC-SHA256(key, "ID.TIMESTAMP.BODY")).
public enum WebhookSignature {
    public static func sign(id: String, timestamp: Int, body: some DataProtocol, secret: WebhookSecret) -> String {
        var hmac = HMAC<SHA256>(key: secret.key)
        hmac.update(data: Data("\(id).\(timestamp).".utf8))
        hmac.update(data: body)
        return "v1," + Data(hmac.finalize()).base64EncodedString()
    }
}
