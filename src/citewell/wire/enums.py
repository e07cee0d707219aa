"""Seed 004's enums of ``ReferenceMetadata`` keys: part of the wire model (the analytics
profile's ``Literal`` types) and of the analytics serializer (:mod:`citewell.profiles.analytics`
maps stored values into them). A module of its own so that the typed client, which reads
these types, does not import the serializer."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: Seed 004's enums of ``ReferenceMetadata`` keys (:mod:`citewell.profiles.analytics` says how values map).
ENUMS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "document_category": ("internal", "brokerage", "expert_network", "corporate_data", "external",
                          "earnings_call", "filing"),
    "document_subcategory": ("calls", "model", "analysis", "report", "filings", "ir_slide", "factsheet", "email",
                             "earning", "slides", "10-K", "10-Q", "6-K", "8-K", "DEF 14A", "20-F",
                             "annual_results", "interim_results", "annual_report", "interim_report", "offerings",
                             "others"),
    "sector": ("Basic Materials", "Consumer Cyclicals", "Consumer Staples", "Energy", "Financial Services",
               "Healthcare", "Industrials", "Technology", "Transportation", "Telecom Services", "Utilities"),
    "subsector": ("Agriculture", "Chemicals", "Metals & Mining", "Paper & Forest", "Steel", "Automobiles",
                  "Branded Consumer Goods", "Business Services", "Consumer Cyclicals", "Consumer Durables",
                  "Education", "Entertainment & Leisure", "Gaming", "Housing", "Lodging", "Media",
                  "Restaurants & Pubs", "Retail", "Textile", "Apparel & Footwear", "Travel", "Beverages",
                  "Consumer Products", "Food", "Tobacco", "Clean Energy", "Energy", "Gas", "Oil", "Oil Services",
                  "Banks", "Brokers & Asset Managers", "Capital Markets", "Diversified Financials", "Insurance",
                  "Real Estate", "Specialty Finance", "Biotechnology", "Healthcare Services", "Life Sciences",
                  "Medical Technology", "Pharmaceuticals", "Aerospace & Defense", "Capital Goods", "Construction",
                  "Electrical Equipment", "Environmental Services", "Machinery",
                  "Machinery & Diversified Industrials", "Multi-Industry", "Packaging",
                  "Communications Technology", "Hardware", "Info Services", "Integrated Electricals", "Internet",
                  "IT Services", "IT Supply Chain", "Semiconductors", "Software", "Technology", "Air Freight",
                  "Airlines", "Airports", "Infrastructure", "Logistics", "Railroads", "Shipping", "Trucking",
                  "Communication Services", "Satellite", "Telecom Wireless", "Towers", "Diversified", "MLPs",
                  "Power", "Utilities", "Water"),
    "rms_type": ("emailnotes", "generalnotes", "templatednotes", "custom-data", "structured-data",
                 "public_transcript", "private_transcript"),
    "rms_document_type": ("note", "attachment"),
})

__all__ = ["ENUMS"]
