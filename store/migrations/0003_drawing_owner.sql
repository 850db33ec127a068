-- Griffon storage, version 3: a consented drawing may name its giver's withdrawal key (its SHA-256
-- only), so that "withdraw my drawings" deletes them all. NULL: no key (bot rooms' drawings).

ALTER TABLE drawings ADD COLUMN owner_hash TEXT;

CREATE INDEX drawings_by_owner ON drawings (owner_hash);
