-- +goose Up

-- Single-use proofs of delivery (channels.Inbound.Nonce): a DingTalk HTTP
-- callback's sign covers only its timestamp, so one captured (timestamp,
-- sign) pair would carry any body for the whole window. Each proof is
-- claimed, in the transaction that stores its message, for the message it
-- came with; another message with the same proof is a replay. A hash of
-- the signature, never the signature or a secret. Rows are forgotten once
-- the signed timestamp has left its window (expires_at).
CREATE TABLE callback_nonces (
    channel         text        NOT NULL,
    account         text        NOT NULL,
    nonce           text        NOT NULL,
    platform_msg_id text        NOT NULL,
    expires_at      timestamptz NOT NULL,
    PRIMARY KEY (channel, account, nonce)
);
CREATE INDEX callback_nonces_expires_idx ON callback_nonces (expires_at);

-- +goose Down

DROP TABLE callback_nonces;
